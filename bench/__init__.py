"""ecu-sim's benchmark: timing on the wire, latency, CPU, memory, start-up and virtual-time
throughput, each side by side with the baselines a user would otherwise use. Run ``scripts/bench``;
the method and the latest full run are in docs/performance.md. Not part of the runtime package."""

// ecu-sim's page: snapshots from /api/ws into plots and the status panel; controls to /api/control.
"use strict";
(function () {
  const token = new URLSearchParams(location.search).get("token") || "";
  const withToken = (path) => token ? `${path}${path.includes("?") ? "&" : "?"}token=${encodeURIComponent(token)}` : path;
  const $ = (id) => document.getElementById(id);
  const MAX_SAMPLES = 4000;
  const samples = [];
  const state = { paused: false, windowS: 60, selected: "", keys: new Set(), lastTick: -1, charts: [] };

  const figure = (name) => (s) => s[name];
  const CHARTS = [
    { id: "speed", title: "speed (km/h)", series: [["speed", figure("speed_kph"), "#1f77b4"], ["set speed", figure("set_speed_kph"), "#d62728"]] },
    { id: "app", title: "APP (%)", series: [["APP", figure("app_pct"), "#2ca02c"]] },
    { id: "brake", title: "brake (%)", series: [["brake", figure("brake_pct"), "#9467bd"]], needs: "brake_pct" },
    { id: "grade", title: "grade (%)", series: [["grade", figure("grade_pct"), "#8c564b"]], needs: "grade_pct" },
    { id: "gear", title: "gear", series: [["gear", figure("gear"), "#e377c2"]], needs: "gear" },
    { id: "rpm", title: "engine speed (rpm)", series: [["engine", figure("engine_rpm"), "#7f7f7f"]], needs: "engine_rpm" },
    { id: "signal", title: "decoded signal", series: [["signal", (s) => signalValue(s, state.selected), "#ff7f0e"]] },
  ];

  // A point of the plots between two whole snapshots carries no signals: undefined, which the
  // plot draws across, unlike a whole snapshot without the signal (null, a gap).
  function signalValue(sample, key) {
    if (!key) return null;
    if (!sample.signals) return undefined;
    const [way, message, name] = key.split("\u0001");
    const group = sample.signals[way] && sample.signals[way][message];
    return group && name in group ? group[name] : null;
  }

  function makeChart(spec) {
    const holder = document.createElement("div");
    holder.className = "chart";
    holder.id = `chart-${spec.id}`;
    $("charts").appendChild(holder);
    const width = Math.max(300, $("plots").clientWidth - 20);
    const opts = {
      title: spec.title, width: width, height: 150,
      scales: { x: { time: false } },
      axes: [{ label: "t (s)" }, {}],
      series: [{ label: "t" }, ...spec.series.map(([label, , stroke]) => ({ label, stroke, width: 1.5, spanGaps: false }))],
    };
    const chart = new uPlot(opts, [[], ...spec.series.map(() => [])], holder);
    return { spec, chart, holder };
  }

  function redraw() {
    if (state.paused || samples.length === 0) return;
    const last = samples[samples.length - 1].t_s;
    let first = samples.length - 1;
    while (first > 0 && samples[first - 1].t_s >= last - state.windowS) first--;
    const shown = samples.slice(first);
    const xs = shown.map((s) => s.t_s);
    for (const c of state.charts) {
      c.chart.setData([xs, ...c.spec.series.map(([, get]) => shown.map(get))]);
    }
  }

  function text(id, value) { $(id).textContent = value; }
  const num = (v, digits, unit) => v === null || v === undefined ? "–" : `${v.toFixed(digits)}${unit}`;

  function showStatus(s) {
    text("node", s.node.toUpperCase());
    text("tick", s.tick);
    text("lateness", s.lateness_ms.toFixed(1));
    text("speed-value", num(s.speed_kph, 2, " km/h"));
    text("set-speed-value", num(s.set_speed_kph, 1, " km/h"));
    text("app-value", num(s.app_pct, 1, " %") + (s.pedal_override_pct !== null ? " (override)" : ""));
    text("cruise-value", s.cruise === null ? "–" : s.cruise);
    text("bus-value", s.bus);
    text("address-value", s.j1939.address === null ? "–" : `0x${s.j1939.address.toString(16).toUpperCase().padStart(2, "0")}`);
    text("faults-value", s.faults.length ? s.faults.join(", ") : "none");
    $("counters").innerHTML = "";
    for (const [name, value] of Object.entries(s.counters)) {
      const row = $("counters").insertRow();
      row.insertCell().outerHTML = `<th>${name}</th>`;
      row.insertCell().textContent = value;
    }
    const body = $("dtcs").tBodies[0];
    body.innerHTML = "";
    for (const dtc of s.j1939.dtcs) {
      const row = body.insertRow();
      for (const v of [dtc.spn, dtc.fmi, dtc.occurrences]) row.insertCell().textContent = v;
    }
    const rec = s.recording;
    if (rec) {
      text("recording-state", rec.recording ? `recording since tick ${rec.since_tick}` : "");
      const link = $("download");
      link.hidden = !rec.download;
      if (rec.download) {
        link.href = withToken("api/recording");
        link.textContent = `download (ticks ${rec.download.start_tick}-${rec.download.stop_tick})`;
      }
    }
  }

  function learnSignals(s) {
    const select = $("signal-select");
    for (const way of ["rx", "tx"]) {
      for (const [message, values] of Object.entries((s.signals && s.signals[way]) || {})) {
        for (const name of Object.keys(values)) {
          const key = [way, message, name].join("\u0001");
          if (state.keys.has(key)) continue;
          state.keys.add(key);
          const option = document.createElement("option");
          option.value = key;
          option.textContent = `${way} ${message} ${name}`;
          select.appendChild(option);
        }
      }
    }
  }

  function take(batch) {
    for (const s of batch) {
      if (s.tick <= state.lastTick) continue;
      state.lastTick = s.tick;
      samples.push(s);
      learnSignals(s);
    }
    if (samples.length > MAX_SAMPLES) samples.splice(0, samples.length - MAX_SAMPLES);
    if (samples.length && state.charts.length === 0) {
      const first = samples[samples.length - 1];
      state.charts = CHARTS.filter((c) => !c.needs || first[c.needs] !== null).map(makeChart);
      document.querySelectorAll(".ccm-only").forEach((e) => e.classList.toggle("hidden", first.node !== "ccm"));
    }
    // a point of the history made while nobody looked holds the plots' figures, not the panel's
    const full = samples.findLast((s) => s.counters !== undefined);
    if (full) showStatus(full);
    redraw();
  }

  function connect() {
    const url = new URL(withToken("api/ws"), location.href);
    url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(url);
    socket.onopen = () => { text("connection", "live"); $("connection").className = "good"; };
    socket.onmessage = (event) => {
      const message = JSON.parse(event.data);
      take(message.history || message.samples || []);
    };
    socket.onclose = () => {
      text("connection", "disconnected; retrying");
      $("connection").className = "bad";
      setTimeout(connect, 1000);
    };
  }

  async function control(body) {
    const headers = { "Content-Type": "application/json" };
    if (token) headers.Authorization = `Bearer ${token}`;
    const message = $("message");
    try {
      const response = await fetch("api/control", { method: "POST", headers, body: JSON.stringify(body) });
      const answer = await response.json();
      message.className = response.ok ? "" : "error";
      message.textContent = response.ok ? `applied before tick ${answer.tick}: ${JSON.stringify(answer.applied)}` : answer.error;
    } catch (error) {
      message.className = "error";
      message.textContent = String(error);
    }
  }

  $("set-speed-apply").onclick = () => control({ set_speed_kph: Number($("set-speed").value) });
  $("cruise-on").onclick = () => control({ cruise: true });
  $("cruise-off").onclick = () => control({ cruise: false });
  $("pedal-apply").onclick = () => control({ pedal_override: Number($("pedal").value) });
  $("pedal-release").onclick = () => control({ pedal_override: null });
  $("fault-on").onclick = () => control({ fault: $("fault").value, on: true });
  $("fault-off").onclick = () => control({ fault: $("fault").value, on: false });
  $("record-start").onclick = () => control({ record: "start" });
  $("record-stop").onclick = () => control({ record: "stop" });
  $("pause").onchange = (e) => { state.paused = e.target.checked; redraw(); };
  $("window").onchange = (e) => { state.windowS = Number(e.target.value); redraw(); };
  $("signal-select").onchange = (e) => {
    state.selected = e.target.value;
    const chart = state.charts.find((c) => c.spec.id === "signal");
    if (chart) chart.holder.querySelector(".u-title").textContent = e.target.selectedOptions[0].textContent;
    redraw();
  };

  window.ecuSim = { samples, state, chartPoints: (id) => {
    const c = state.charts.find((x) => x.spec.id === id);
    return c ? c.chart.data[0].length ? c.chart.data[0][c.chart.data[0].length - 1] : null : null;
  } };
  connect();
})();

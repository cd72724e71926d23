"""Campaigns: many simulations from one TOML file, on local processes or a Dask cluster.

spec reads the file, matrix expands it into cases with stable ids, case runs one case through
the simulation and figures turns its series into a row, executors run cases where asked,
results keeps the table (append, resume, sort), progress shows how far it is, compare gates a
change on two tables, and runner puts them together for the command line.
"""

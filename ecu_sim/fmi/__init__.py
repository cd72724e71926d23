"""The truck model as an FMI 2.0 co-simulation unit (PythonFMU), for FMPy, Simulink, OpenModelica, Dymola."""

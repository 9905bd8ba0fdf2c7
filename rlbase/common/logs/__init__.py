"""Logging: the logger and its output formats, TensorBoard, plots and videos."""

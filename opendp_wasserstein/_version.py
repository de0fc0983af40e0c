"""The package version: one source, read by the package, the command line and the build."""

__version__ = "0.1.0"

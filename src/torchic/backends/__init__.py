"""Backends: each subpackage implements dispatcher.Backend and registers itself."""

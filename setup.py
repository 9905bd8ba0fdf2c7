"""rlbase's metadata lives in pyproject.toml (PEP 621); this shim keeps ``setup.py`` for
tools and habits that still call it."""

from setuptools import setup

setup()

"""``rlbase export``: the command (:mod:`rlbase.export.cli`) and the public names of
the exporter, which lives in :mod:`rlbase.common.export` (models export themselves)."""

from rlbase.common.export import FORMATS, export_model

__all__ = ["FORMATS", "export_model"]

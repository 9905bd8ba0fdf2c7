"""``rlbase.logger``: the same module as :mod:`rlbase.common.logger` (Baselines imported its
logger as ``baselines.logger``)."""

import sys

from rlbase.common import logger as _logger

sys.modules[__name__] = _logger

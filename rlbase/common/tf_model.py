"""The base of models whose state is TensorFlow variables (every algorithm but ES and tabular
Q-learning): their arrays are their variable groups, numbered within each group."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from rlbase.common.base_model import BaseModel
from rlbase.common.io.serialization import check_named_arrays, numbered_arrays


class TFModel(BaseModel):
    """A :class:`BaseModel` whose saved arrays are ``variable_groups()`` (``group/0007``) plus
    ``extra_arrays()`` (statistics kept outside TF)."""

    @abstractmethod
    def variable_groups(self) -> dict[str, Sequence[tf.Variable]]:
        """Every variable saved with the model, by group (networks, targets, optimizers)."""

    def extra_arrays(self) -> dict[str, np.ndarray]:
        """Arrays saved beside the variables (statistics kept in numpy)."""
        return {}

    def load_extra_arrays(self, arrays: dict[str, np.ndarray], source: str) -> None:
        """Set what :meth:`extra_arrays` returns (only arrays checked to fit reach here)."""

    def after_load(self) -> None:
        """Called after the variables changed outside training (refresh numpy mirrors)."""

    def parameter_arrays(self) -> dict[str, np.ndarray]:
        arrays = {f"{group}/{i:04d}": v.numpy()
                  for group, variables in self.variable_groups().items()
                  for i, v in enumerate(variables)}
        arrays.update(self.extra_arrays())
        return arrays

    def load_parameter_arrays(self, arrays: dict[str, np.ndarray], source: str = "") -> None:
        plan: list[tuple[tf.Variable, np.ndarray]] = []
        for group, variables in self.variable_groups().items():
            saved = numbered_arrays(arrays, group, [v.shape for v in variables], source)
            plan.extend(zip(variables, saved))
        extra = self.extra_arrays()
        check_named_arrays(arrays, extra, source)
        # Assign only once every array has been checked: a bad file leaves the model untouched.
        for var, value in plan:
            var.assign(value)
        self.load_extra_arrays({k: arrays[k] for k in extra}, source)
        self.after_load()

    def trainable_variables(self) -> list[tf.Variable]:
        """Every variable a gradient step changes (the "every variable trains" tests)."""
        return [v for vs in self.variable_groups().values() for v in vs if v.trainable]

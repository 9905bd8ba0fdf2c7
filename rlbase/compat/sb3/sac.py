"""SAC as a model class (rlbase.sac's build_model and train), and what it shares with TQC's
class (rlbase.compat.sb3.tqc): the squashed-Gaussian policy's action_probability."""

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from rlbase.compat.sb3.base_class import BaseRLModel

if TYPE_CHECKING:  # TensorFlow is imported when a model is built, not with the classes
    from rlbase.common.families.soft_actor_critic import SoftActorCriticAgent


class SquashedGaussianClass(BaseRLModel):
    """A class whose model has a squashed-Gaussian actor (SAC, TQC). action_probability gives
    the deterministic action tanh(mean), in the env's bounds, and the std of the Gaussian
    before the tanh; with ``actions``, their density under the squashed (tanh) policy."""

    policies = ("MlpPolicy", "MultiInputPolicy")

    def action_probability(self, observation: Any, state: Any = None, mask: Any = None,
                           actions: Any = None, logp: bool = False) -> Any:
        """Without ``actions``: ``(tanh(mean) in the env's bounds, the pre-tanh std)``. With
        ``actions`` (in the env's bounds): their density under the squashed Gaussian policy,
        or its log (0, or -inf, outside the open action box), not the density of a Gaussian
        around the squashed mean."""
        if actions is None:
            return super().action_probability(observation, state, mask)
        # built by rlbase.sac.model or rlbase.tqc.model
        model = cast("SoftActorCriticAgent", self._require_model())
        obs, batched, n = self._batch(observation)
        logp_val = model.log_prob(obs, np.asarray(actions, np.float64).reshape(n, -1))
        result = logp_val if logp else np.exp(logp_val)
        return result if batched else result[0]


class SAC(SquashedGaussianClass):
    """Soft actor-critic; hyperparameters are those of :func:`rlbase.sac.sac.learn` (or their
    SB3 names). action_probability gives the deterministic action tanh(mean), in the env's
    bounds, and the std of the Gaussian before the tanh; with ``actions``, their density
    under the squashed (tanh) policy."""

    algorithm = "sac"

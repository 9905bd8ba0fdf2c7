"""TQC as a model class (rlbase.tqc's build_model and train), sb3-contrib's ``TQC``."""

from rlbase.compat.sb3.sac import SquashedGaussianClass


class TQC(SquashedGaussianClass):
    """Truncated quantile critics; hyperparameters are those of :func:`rlbase.tqc.tqc.learn`
    (or their SB3 names; ``policy_kwargs`` n_critics and n_quantiles set the fields of the
    same names). action_probability gives the deterministic action tanh(mean), in the env's
    bounds, and the std of the Gaussian before the tanh; with ``actions``, their density
    under the squashed (tanh) policy."""

    algorithm = "tqc"

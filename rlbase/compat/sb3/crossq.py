"""CrossQ as a model class (rlbase.crossq's build_model and train), sb3-contrib's ``CrossQ``."""

from rlbase.compat.sb3.sac import SquashedGaussianClass


class CrossQ(SquashedGaussianClass):
    """CrossQ; hyperparameters are those of :func:`rlbase.crossq.crossq.learn` (or their SB3
    names; ``policy_kwargs`` net_arch (a list, or dict(pi=..., qf=...)), n_critics,
    batch_norm, batch_norm_momentum, batch_norm_eps and renorm_warmup_steps set the fields
    and network widths of the same meaning). action_probability gives the deterministic action
    tanh(mean), in the env's bounds, and the std of the Gaussian before the tanh (the actor in
    inference mode); with ``actions``, their density under the squashed (tanh) policy."""

    algorithm = "crossq"

"""Stable-Baselines3's parameter names, mapped onto rlbase's (the classes accept both).

The table each algorithm's class understands is in :data:`SB3_NAMES` and written out in
rlbase/docs/sb3_names.md (a test keeps the two equal).
"""

from __future__ import annotations

from typing import Any, Callable

from rlbase.common.errors import RLBaseError

Rule = str | Callable[[Any, dict[str, Any], int], dict[str, Any]]


def _ppo_batch_size(value: Any, given: dict[str, Any], num_envs: int) -> dict[str, Any]:
    """SB3's minibatch size -> rlbase's number of minibatches per epoch."""
    nsteps = given.get("nsteps", given.get("n_steps", 2048))
    batch = int(nsteps) * num_envs
    if value < 1 or batch % int(value):
        raise RLBaseError(f"batch_size={value} must divide n_steps * n_envs = {batch} "
                          "(rlbase splits each batch into whole minibatches)")
    return {"nminibatches": batch // int(value)}


def _accept(expected: Any) -> Rule:
    """An SB3 option whose only value rlbase supports is ``expected``."""
    def rule(value: Any, given: dict[str, Any], num_envs: int) -> dict[str, Any]:
        if value != expected:
            raise RLBaseError(f"rlbase supports only {expected!r} here, got {value!r}")
        return {}
    rule.__doc__ = f"Accepted when {expected!r}: what rlbase always does."
    return rule


def _device(value: Any, given: dict[str, Any], num_envs: int) -> dict[str, Any]:
    """Accepted ('auto', 'cpu', 'cuda'): TensorFlow places the work itself (a visible GPU is
    used)."""
    if value not in ("auto", "cpu", "cuda", "gpu"):
        raise RLBaseError(f"device must be 'auto', 'cpu' or 'cuda', got {value!r}")
    return {}


def _train_freq_steps(value: Any) -> int:
    """SB3's train_freq: ``n`` or ``(n, "step")`` env steps (``"episode"`` units are not
    rlbase's)."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2 or value[1] != "step":
            raise RLBaseError(f"train_freq={value!r}: rlbase counts train_freq in env steps; "
                              "give n or (n, 'step')")
        value = value[0]
    return value


def _train_freq(value: Any, given: dict[str, Any], num_envs: int) -> dict[str, Any]:
    """`train_freq` in env steps: n or (n, 'step')."""
    return {"train_freq": _train_freq_steps(value)}


def _gradient_steps(value: Any, given: dict[str, Any], num_envs: int) -> dict[str, Any]:
    """SB3's -1: as many gradient steps as env steps were collected since the last phase."""
    if value == -1:
        return {"gradient_steps": int(_train_freq_steps(given.get("train_freq", 1))) * num_envs}
    return {"gradient_steps": value}


COMMON: dict[str, Rule] = {"learning_rate": "lr", "device": _device}
SB3_NAMES: dict[str, dict[str, Rule]] = {
    "a2c": {**COMMON, "n_steps": "nsteps", "rms_prop_eps": "epsilon", "gae_lambda": "lam",
            "use_rms_prop": _accept(True)},
    "ppo": {**COMMON, "n_steps": "nsteps", "batch_size": _ppo_batch_size,
            "n_epochs": "noptepochs", "gae_lambda": "lam", "clip_range": "cliprange",
            "normalize_advantage": _accept(True)},
    "acer": {**COMMON, "n_steps": "nsteps"},
    "dqn": {**COMMON, "target_update_interval": "target_network_update_freq",
            "train_freq": _train_freq, "gradient_steps": _gradient_steps},
    "es": {**COMMON},
    "qlearning": {**COMMON},
}


def _activation(value: Any) -> Any:
    """SB3 passes torch modules (``torch.nn.ReLU``): take their name; keep anything else."""
    if isinstance(value, type):
        return value.__name__.lower()
    return value


def _net_arch(algorithm: str, arch: Any) -> dict[str, Any]:
    """``net_arch`` -> the mlp's layer widths (and a separate value torso for pi/vf dicts)."""
    out: dict[str, Any] = {}
    if isinstance(arch, dict):
        parts = {k: list(v) for k, v in arch.items()}
        widths = list(parts.values())
        if any(w != widths[0] for w in widths):
            raise RLBaseError(f"net_arch={arch}: rlbase's networks share one shape; give the "
                              "same widths to every part")
        if algorithm in ("a2c", "ppo", "acer") and "vf" in parts:
            out["value_network"] = "copy"
        arch = widths[0]
    sizes = [int(w) for w in arch]
    if algorithm == "dqn":
        out["hiddens"] = []  # SB3's net_arch is the whole Q-network
    out["layer_sizes"] = sizes
    return out


def translate(algorithm: str, hyperparameters: dict[str, Any], policy_kwargs: dict[str, Any],
              num_envs: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(hyperparameters, policy_kwargs)`` under rlbase's names. A name given both ways is
    an error; rlbase's own names pass through."""
    table = SB3_NAMES.get(algorithm, COMMON)
    out: dict[str, Any] = {}
    for name, value in hyperparameters.items():
        rule = table.get(name)
        if rule is None:
            mapped = {name: value}
        elif isinstance(rule, str):
            mapped = {rule: value}
        else:
            try:
                mapped = rule(value, hyperparameters, num_envs)
            except RLBaseError as exc:
                raise RLBaseError(f"{name}={value!r}: {exc}") from None
        for key, val in mapped.items():
            if key in out or (key != name and key in hyperparameters):
                raise RLBaseError(f"{key} is given twice (as {name} and under another name)")
            out[key] = val
    kwargs = dict(policy_kwargs)
    if "net_arch" in kwargs:
        kwargs.update(_net_arch(algorithm, kwargs.pop("net_arch")))
        if "hiddens" in kwargs:
            out.setdefault("hiddens", kwargs.pop("hiddens"))
    if "activation_fn" in kwargs:
        kwargs["activation"] = _activation(kwargs.pop("activation_fn"))
    return out, kwargs

"""Stable-Baselines3's ``policy_kwargs`` in rlbase's terms.

SB3's parameter names are fields' metadata in each algorithm's config; what is left here is
the network description, which SB3 gives as torch classes and nested lists. Each SB3 key is
translated to what builds the same network here, accepted only with the one value rlbase
always uses, or refused in one line that says what to write instead. Other keys are rlbase's
own network keyword arguments (``num_layers``, ``num_hidden``, ``value_network``, ...).
"""

from __future__ import annotations

from typing import Any, Callable

from rlbase.common.errors import RLBaseError

# Algorithms with an actor-critic policy (rlbase.common.networks.policies): SB3's A2C, PPO and TRPO
# build separate policy and value MLPs from any net_arch (ACER takes SB3's pi/vf dict).
_ACTOR_CRITIC = ("a2c", "ppo", "acer", "trpo")
_SEPARATE_VALUE_NET = ("a2c", "ppo", "trpo")
# Algorithms whose actor and critics each have their own torso (SB3's TD3/DDPG/SAC policies).
_CONTINUOUS = ("ddpg", "sac", "tqc", "crossq")
# sb3-contrib's CrossQ policy keys that are CrossQ's config fields of the same names.
_CROSSQ_FIELDS = ("batch_norm", "batch_norm_momentum", "batch_norm_eps", "renorm_warmup_steps")

# SB3 keys accepted with one value only: key -> (the value, what happens instead).
_FIXED: dict[str, tuple[Any, str]] = {
    "normalize_images": (True, "uint8 image observations are always scaled to [0, 1]"),
    "use_sde": (False, "rlbase has no state-dependent exploration"),
}
_REFUSED = {
    "optimizer_class": "rlbase's optimizers are fixed per algorithm (Adam or RMSProp, see the "
                       "algorithm's docs); set the learning rate with learning_rate",
    "optimizer_kwargs": "rlbase's optimizers are fixed per algorithm; set the learning rate "
                        "with learning_rate",
    "features_extractor_class": "pass a registered network name or a Keras layer builder as "
                                "the policy instead",
}


def _activation(value: Any) -> str | Callable:
    """A Keras activation name or function; a class (SB3's torch.nn.ReLU) is refused."""
    if isinstance(value, type):
        raise RLBaseError(f"activation_fn={value.__module__}.{value.__name__}: rlbase builds "
                          "Keras layers; write activation_fn='relu' (or 'tanh', 'elu', ... or "
                          "a Keras activation function)")
    if not (isinstance(value, str) or callable(value)):
        raise RLBaseError(f"activation_fn must be a Keras activation name such as 'relu' or a "
                          f"function, got {value!r}")
    return value


def _widths(value: Any, what: str) -> list[int]:
    if not isinstance(value, (list, tuple)) or any(
            isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in value):
        raise RLBaseError(f"{what} must be a list of positive layer widths, got {value!r}")
    return [int(w) for w in value]


def net_arch(algorithm: str, arch: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``net_arch`` -> (config fields, network kwargs): the mlp's layer widths; for A2C/PPO a
    separate value torso (SB3 never shares their MLP layers); for DQN no extra hidden layers
    (SB3's net_arch is the whole Q-network). None: the algorithm's default network."""
    network: dict[str, Any] = {}
    fields: dict[str, Any] = {}
    if arch is None:
        return fields, network
    if algorithm == "crossq":  # separate actor (pi) and critic (qf) widths, as sb3-contrib's
        parts = arch if isinstance(arch, dict) else {"pi": arch, "qf": arch}
        if set(parts) != {"pi", "qf"}:
            raise RLBaseError(f"net_arch={arch}: crossq takes a list or dict(pi=[...], "
                              "qf=[...])")
        network["layer_sizes"] = _widths(parts["pi"], "net_arch['pi']")
        fields["critic_layer_sizes"] = tuple(_widths(parts["qf"], "net_arch['qf']"))
        return fields, network
    if isinstance(arch, dict):
        parts = {k: _widths(v, f"net_arch[{k!r}]") for k, v in arch.items()}
        widths = list(parts.values())
        if not widths or any(w != widths[0] for w in widths):
            raise RLBaseError(f"net_arch={arch}: rlbase's networks share one shape; give the "
                              "same widths to every part")
        if algorithm in _ACTOR_CRITIC and "vf" in parts:
            network["value_network"] = "copy"
        arch = widths[0]
    network["layer_sizes"] = _widths(arch, "net_arch")
    if algorithm in _SEPARATE_VALUE_NET:
        network["value_network"] = "copy"
    if algorithm in ("dqn", "qrdqn"):
        fields["hiddens"] = ()
    return fields, network


def _n_critics(algorithm: str, value: Any) -> dict[str, Any]:
    if algorithm in ("tqc", "crossq"):  # a config field there (sb3-contrib: any number >= 1)
        return {"n_critics": value}
    if algorithm == "ddpg" and value in (1, 2) and not isinstance(value, bool):
        return {"twin_q": value == 2}
    if algorithm == "sac" and value == 2 and not isinstance(value, bool):
        return {}
    allowed = "1 or 2" if algorithm == "ddpg" else "2" if algorithm == "sac" else None
    if allowed is None:
        raise RLBaseError(f"n_critics is not an option of {algorithm}'s policy")
    raise RLBaseError(f"n_critics must be {allowed} for {algorithm} (rlbase's critics), got "
                      f"{value!r}")


def translate_policy_kwargs(algorithm: str, policy_kwargs: dict[str, Any],
                            network: Any = "mlp") -> tuple[dict[str, Any], dict[str, Any]]:
    """SB3's ``policy_kwargs`` -> (config fields they set, rlbase's network kwargs).

    network: the network the policy name chose ('mlp' for MlpPolicy, 'cnn' for CnnPolicy).
    """
    kwargs = dict(policy_kwargs)
    fields: dict[str, Any] = {}
    for key, why in _REFUSED.items():
        if key in kwargs:
            raise RLBaseError(f"policy_kwargs {key} is not supported: {why}")
    for key, (value, why) in _FIXED.items():
        if key in kwargs and kwargs.pop(key) is not value:
            raise RLBaseError(f"policy_kwargs {key} must be {value} here ({why})")
    if "net_arch" in kwargs:
        if network != "mlp" and kwargs["net_arch"] is not None:
            raise RLBaseError(f"net_arch describes an MLP; the {network!r} network takes its "
                              "own kwargs (CnnPolicy: features_extractor_kwargs="
                              "dict(features_dim=N))")
        fields, arch = net_arch(algorithm, kwargs.pop("net_arch"))
        kwargs.update(arch)
    if "n_critics" in kwargs:
        fields.update(_n_critics(algorithm, kwargs.pop("n_critics")))
    if algorithm == "crossq":
        fields.update({k: kwargs.pop(k) for k in _CROSSQ_FIELDS if k in kwargs})
    if "n_quantiles" in kwargs:
        if algorithm not in ("tqc", "qrdqn"):
            raise RLBaseError(f"n_quantiles is not an option of {algorithm}'s policy (TQC's "
                              "and QRDQN's)")
        fields["n_quantiles"] = kwargs.pop("n_quantiles")
    if "activation_fn" in kwargs:
        kwargs["activation"] = _activation(kwargs.pop("activation_fn"))
    if "features_extractor_kwargs" in kwargs:
        extra = dict(kwargs.pop("features_extractor_kwargs") or {})
        if network not in ("cnn", "cnn_small") or set(extra) - {"features_dim"}:
            raise RLBaseError(f"features_extractor_kwargs={extra}: only features_dim of a "
                              "CnnPolicy (its dense layer's width) is supported")
        if "features_dim" in extra:
            kwargs["num_hidden"] = extra["features_dim"]
    if "ortho_init" in kwargs:
        if algorithm not in _ACTOR_CRITIC or kwargs.pop("ortho_init") is not True:
            raise RLBaseError("policy_kwargs ortho_init: rlbase's actor-critic policies are "
                              "always initialized orthogonally (ortho_init=True, A2C/PPO only)")
    if "squash_output" in kwargs:
        if algorithm not in _ACTOR_CRITIC or kwargs.pop("squash_output") is not False:
            raise RLBaseError("policy_kwargs squash_output: only False (A2C/PPO; it needs "
                              "use_sde); SAC/TD3 actors always squash with tanh")
    if "share_features_extractor" in kwargs:
        share = kwargs.pop("share_features_extractor")
        if algorithm in _CONTINUOUS:
            if share is not False:
                raise RLBaseError("share_features_extractor must be False here: the actor and "
                                  "every critic have their own network")
        elif algorithm in _ACTOR_CRITIC and isinstance(share, bool):
            if not share:
                kwargs["value_network"] = "copy"
        else:
            raise RLBaseError(f"share_features_extractor is not an option of {algorithm}")
    if "log_std_init" in kwargs and algorithm not in _ACTOR_CRITIC:
        raise RLBaseError(f"log_std_init is an option of A2C/PPO's Gaussian policies, not "
                          f"{algorithm}'s")
    return fields, kwargs

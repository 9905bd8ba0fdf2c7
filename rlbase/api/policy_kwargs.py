"""Stable-Baselines3's ``policy_kwargs`` (``net_arch``, ``activation_fn``) in rlbase's terms.

SB3's parameter names are fields' metadata in each algorithm's config; what is left here is
the network description, which SB3 gives as torch modules and nested lists.
"""

from __future__ import annotations

from typing import Any

from rlbase.common.errors import RLBaseError

# Actor-critic algorithms whose value head can have its own torso (SB3's pi/vf dicts).
_ACTOR_CRITIC = ("a2c", "ppo", "acer")


def activation_name(value: Any) -> Any:
    """SB3 passes torch modules (``torch.nn.ReLU``): take their name; keep anything else."""
    if isinstance(value, type):
        return value.__name__.lower()
    return value


def net_arch(algorithm: str, arch: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``net_arch`` -> (config fields, network kwargs): the mlp's layer widths, a separate value
    torso for pi/vf dicts, and for DQN no extra hidden layers (SB3's net_arch is the whole
    Q-network)."""
    network: dict[str, Any] = {}
    if isinstance(arch, dict):
        parts = {k: list(v) for k, v in arch.items()}
        widths = list(parts.values())
        if any(w != widths[0] for w in widths):
            raise RLBaseError(f"net_arch={arch}: rlbase's networks share one shape; give the "
                              "same widths to every part")
        if algorithm in _ACTOR_CRITIC and "vf" in parts:
            network["value_network"] = "copy"
        arch = widths[0]
    network["layer_sizes"] = [int(w) for w in arch]
    fields = {"hiddens": ()} if algorithm == "dqn" else {}
    return fields, network


def translate_policy_kwargs(algorithm: str, policy_kwargs: dict[str, Any]
                            ) -> tuple[dict[str, Any], dict[str, Any]]:
    """SB3's ``policy_kwargs`` -> (config fields they set, rlbase's network kwargs)."""
    kwargs = dict(policy_kwargs)
    fields: dict[str, Any] = {}
    if "net_arch" in kwargs:
        fields, network = net_arch(algorithm, kwargs.pop("net_arch"))
        kwargs.update(network)
    if "activation_fn" in kwargs:
        kwargs["activation"] = activation_name(kwargs.pop("activation_fn"))
    return fields, kwargs

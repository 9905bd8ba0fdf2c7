"""Actor-critic with experience replay (ACER, Wang et al. 2016) for Discrete action spaces."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Callable

from rlbase.acer.config import CONFIG
from rlbase.acer.model import Model, build_model
from rlbase.acer.runner import Runner, Sequences
from rlbase.common.errors import NonFiniteError
from rlbase.common.loops.learning import config_signature, start_learning
from rlbase.common.loops.on_policy import Rollouts, learning_rate, run_on_policy
from rlbase.common.loops.training_loop import LoopOptions, TrainingLoop
from rlbase.common.vec_env import VecEnv

ALGORITHM = "acer"
LOSSES = ("policy_loss", "value_loss")


@config_signature(CONFIG, notes={
    "env": "a VecEnv with a Discrete action space (a gymnasium env or an env id is wrapped)",
    "callback": "called after every on-policy update and its replay updates as "
                "callback(model, info); returning False stops",
    "**network_kwargs": "passed to the network builder (num_layers, num_hidden, nlstm, ...); "
                        "value_network='copy' gives the Q head its own torso"})
def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(80e6),
          seed: int | None = None, **kwargs: Any) -> Model:
    """Train a policy with ACER and return the :class:`~rlbase.acer.model.Model`: an update
    per rollout of ``nsteps`` steps of every env, then Poisson(replay_ratio) updates on
    replayed ones (total_timesteps is rounded up to whole rollouts)."""
    model, env, options = start_learning(CONFIG, build_model, network, env, total_timesteps,
                                         seed, kwargs)
    return train(model, env, total_timesteps, options)


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run ACER's loop on ``model`` for ``total_timesteps`` more env steps (with ``resume``:
    up to that many in all): each iteration is an on-policy update on a fresh rollout and
    Poisson(replay_ratio) updates on replayed ones. Behind a VecNormalize the on-policy update
    uses the rollout as collected, the buffer keeps it raw and a replayed one is normalized
    with the statistics of the moment it is replayed."""
    config = model.config
    buffer, rng = model.replay_buffer, model.replay_rng
    if buffer is not None:
        buffer.configure(env)  # its storage exists before a checkpoint is restored into it

    def update(seq: Sequences, current: dict[str, float], iteration: int
               ) -> tuple[dict[str, float], None]:
        stats = model.train(seq, current["learning_rate"])
        _check_finite(model, stats, iteration, "on-policy")
        return stats, None

    def replay(seq: Sequences, current: dict[str, float], iteration: int) -> dict[str, float]:
        nreplay = 0
        if buffer is not None:
            buffer.put(model.stored(seq))
            if buffer.has_atleast(config.replay_start):
                nreplay = int(rng.poisson(config.replay_ratio))
                for _ in range(nreplay):
                    _check_finite(model, model.train(model.replayed(rng),
                                                     current["learning_rate"]),
                                  iteration, "replay")
        return {"replay_updates": nreplay,
                "buffer_rollouts": 0 if buffer is None else buffer.num_in_buffer}

    return run_on_policy(model, env, total_timesteps, options, loss_names=LOSSES,
                         rollouts=_Sequences.maker(model), update=update,
                         schedule=learning_rate(config.lr, config.lrschedule),
                         after_update=replay)


class _Sequences:
    """ACER's runner as the loop's rollouts: SB3 callbacks' hooks run once per iteration (the
    runner takes none), and an update hands back no step to act on."""

    def __init__(self, runner: Runner):
        self.runner = runner
        self.steps = runner.num_envs * runner.nsteps

    @classmethod
    def maker(cls, model: Model) -> Callable[[TrainingLoop], Rollouts]:
        def make(loop: TrainingLoop) -> Rollouts:
            raw = None if model.replay_buffer is None else model.raw_replay
            return cls(Runner(loop.env, model, model.nsteps, episodes=loop.episodes, raw=raw))
        return make

    def collect(self, loop: TrainingLoop) -> Sequences:
        return self.runner.run()

    def hand_back(self, pending: None) -> None:
        pass


def _check_finite(model: Model, stats: Mapping[str, float], iteration: int, kind: str) -> None:
    """Stop at the first non-finite loss of any update, before replay spreads it (the loop
    checks only the statistics it is handed, and no checkpoint is written)."""
    for name in LOSSES:
        if not math.isfinite(stats[name]):
            nbatch = model.num_envs * model.nsteps
            raise NonFiniteError(f"{ALGORITHM}: {name} became {stats[name]} in the {kind} "
                                 f"update of iteration {iteration} "
                                 f"({model.num_timesteps + nbatch} timesteps)")

"""Actor-critic with experience replay (ACER, Wang et al. 2016) for Discrete action spaces."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Callable

from rlbase.acer.config import CONFIG, ACERConfig
from rlbase.acer.model import Model, build_model
from rlbase.acer.runner import Runner, Sequences
from rlbase.common.errors import NonFiniteError
from rlbase.common.learning import start_learning
from rlbase.common.loop import LoopOptions, TrainingLoop
from rlbase.common.loops.on_policy import Rollouts, learning_rate, run_on_policy
from rlbase.common.vec_env import VecEnv

ALGORITHM = "acer"
LOSSES = ("policy_loss", "value_loss")
C = ACERConfig


def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int = int(80e6),
          seed: int | None = None, *, nsteps: int = C.nsteps,
          lr: float | Callable[[float], float] = C.lr, lrschedule: str = C.lrschedule,
          q_coef: float = C.q_coef, ent_coef: float = C.ent_coef,
          max_grad_norm: float | None = C.max_grad_norm, rms_alpha: float = C.rms_alpha,
          rms_epsilon: float = C.rms_epsilon, gamma: float = C.gamma,
          buffer_size_per_env: int = C.buffer_size_per_env, replay_ratio: float = C.replay_ratio,
          replay_start: int = C.replay_start, c: float = C.c,
          trust_region: bool = C.trust_region, tau: float = C.tau, delta: float = C.delta,
          jit_compile: bool | None = C.jit_compile, log_interval: int = C.log_interval,
          eval_freq: int = C.eval_freq, eval_episodes: int = C.eval_episodes,
          checkpoint_interval: int = C.checkpoint_interval,
          precision: str = C.precision,
          eval_env: VecEnv | Any | None = None,
          callback: Callable[[Model, dict[str, Any]], bool | None] | None = None,
          load_path: str | None = None, checkpoint_path: str | None = None,
          resume: bool = False, **network_kwargs: Any) -> Model:
    """Train a policy with ACER and return the :class:`~rlbase.acer.model.Model`.

    The keyword arguments from ``nsteps`` to ``precision`` are the fields of
    :class:`~rlbase.acer.config.ACERConfig` (type, unit, range and meaning there, and in
    rlbase/docs/algorithms/acer.md); ``n_steps`` and ``learning_rate`` are accepted too, and
    Baselines' deprecated ``rprop_alpha``, ``rprop_epsilon`` (now ``rms_alpha``,
    ``rms_epsilon``) and ``alpha`` (the average policy's decay, now ``tau = 1 - alpha``).

    network: a registered network name (mlp, cnn, lstm, ...) or a builder callable.
    env: a VecEnv with a Discrete action space (a gymnasium env or an env id is wrapped).
    total_timesteps: env steps to train for, summed over envs (rounded up to whole updates).
    seed: seed of python, numpy, TensorFlow and the envs (None: unseeded).
    eval_env: an env (or env id, seeded with seed + 1000) to evaluate the policy on.
    callback: called after every on-policy update and its replay updates as
        ``callback(model, info)``; returning False stops.
    load_path: continue from this saved model (its network and architecture are used).
    checkpoint_path: the checkpoints' folder (None: <log dir>/checkpoints).
    resume: continue from the newest checkpoint in checkpoint_path (total_timesteps counts
        the whole run, including the steps done before the checkpoint).
    **network_kwargs: passed to the network builder (num_layers, num_hidden, nlstm, ...);
        ``value_network='copy'`` gives the Q head its own torso.
    """
    model, env, options = start_learning(CONFIG, build_model, locals())
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

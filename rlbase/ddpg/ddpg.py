"""Deep Deterministic Policy Gradient (Lillicrap et al. 2016), with TD3's options."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from rlbase.common.config import warn_deprecated
from rlbase.common.errors import RLBaseError
from rlbase.common.families.her_baselines import refuse_baselines_names
from rlbase.common.loops.learning import config_signature, start_learning
from rlbase.common.loops.off_policy import OffPolicyHooks, run_off_policy
from rlbase.common.loops.training_loop import LoopOptions, crossings
from rlbase.common.mpi_util import check_synced
from rlbase.common.vec_env import VecEnv
from rlbase.ddpg.config import CONFIG
from rlbase.ddpg.model import ALGORITHM, Model, build_model

LOSSES = ("critic_loss", "actor_loss")
# Baselines' defaults of the spellings that only set the length of a run.
BASELINES_EPOCHS = {"nb_epochs": 500, "nb_epoch_cycles": 20, "nb_rollout_steps": 100}
# Under MPI the workers' weights are compared every this many vectorized steps.
SYNC_CHECK_INTERVAL = 2000


@config_signature(CONFIG, notes={
    "network": "a feed-forward registry network name ('mlp', ...) or builder, the torso of "
               "the actor and of every critic",
    "env": "a VecEnv with a Box action space (a gymnasium env or an env id is wrapped)",
    "total_timesteps": "env steps to train for, summed over envs (None: 1e6, or Baselines' "
                       "nb_epochs * nb_epoch_cycles * nb_rollout_steps * num_envs when "
                       "nb_epochs is given)",
    "seed": "seed of python, numpy, TensorFlow, the envs, the noise and the replay sampling "
            "(each MPI worker its own streams)",
    "eval_env": "an env (or env id, seeded with seed + 1000) to evaluate the deterministic "
                "policy on",
    "callback": "called after every vectorized env step as callback(model, info); returning "
                "False stops",
    "checkpoint_path": "the checkpoints' folder (None: <log dir>/checkpoints); a checkpoint "
                       "holds the model, replay buffer, noise processes, perturbed actor and "
                       "generators (not under MPI)",
    "**network_kwargs": "passed to the network builder ('mlp': layer_sizes, num_layers, "
                        "num_hidden, activation (relu here), layer_norm); SB3's names are "
                        "taken out first. Baselines' nb_epochs, nb_epoch_cycles, "
                        "nb_rollout_steps, nb_train_steps and clip_norm are accepted with a "
                        "DeprecationWarning; nb_eval_steps and render_eval only where they "
                        "change nothing"})
def learn(network: str | Callable, env: VecEnv | Any, total_timesteps: int | None = None,
          seed: int | None = None, **kwargs: Any) -> Model:
    """Train a deterministic actor and its critic(s) with DDPG (TD3 with twin_q, policy_delay
    and target_noise) and return the :class:`~rlbase.ddpg.model.Model`."""
    _baselines_evaluation(kwargs, kwargs.get("eval_env"))
    refuse_baselines_names(kwargs)
    epoch_steps = _baselines_run_length(kwargs, total_timesteps)
    model, env, options = start_learning(CONFIG, build_model, network, env, total_timesteps,
                                         seed, kwargs)
    if epoch_steps is not None:
        total_timesteps = epoch_steps * env.num_envs
    return train(model, env, int(1e6) if total_timesteps is None else total_timesteps, options)


def _baselines_evaluation(network_kwargs: dict[str, Any], eval_env: Any) -> None:
    """Pop Baselines' evaluation spellings where they change nothing (no eval_env, no
    rendering); refuse them where Baselines would have acted on them."""
    steps = network_kwargs.pop("nb_eval_steps", None)
    if steps is not None and eval_env is not None:
        raise RLBaseError(f"ddpg: nb_eval_steps={steps!r} is not supported: evaluation plays "
                          f"whole episodes; write eval_episodes=N and eval_freq=M")
    if network_kwargs.pop("render_eval", False):
        raise RLBaseError("ddpg: render_eval=True is not supported: record the evaluation "
                          "env with VecVideoRecorder instead")


def _baselines_run_length(network_kwargs: dict[str, Any], total_timesteps: int | None
                          ) -> int | None:
    """Pop Baselines' run-length spellings; with nb_epochs, the vectorized steps they ask for
    (nb_epochs * nb_epoch_cycles * nb_rollout_steps)."""
    cycles = network_kwargs.pop("nb_epoch_cycles", None)
    epochs = network_kwargs.pop("nb_epochs", None)
    if cycles is not None:
        warn_deprecated(ALGORITHM, "nb_epoch_cycles", "total_timesteps")
    if epochs is None:
        return None
    warn_deprecated(ALGORITHM, "nb_epochs", "total_timesteps")
    if total_timesteps is not None:
        raise RLBaseError(f"give total_timesteps or nb_epochs, not both (got "
                          f"{total_timesteps!r} and {epochs!r})")
    rollout = network_kwargs.get("nb_rollout_steps", BASELINES_EPOCHS["nb_rollout_steps"])
    cycles = BASELINES_EPOCHS["nb_epoch_cycles"] if cycles is None else cycles
    for name, value in (("nb_epochs", epochs), ("nb_epoch_cycles", cycles),
                        ("nb_rollout_steps", rollout)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise RLBaseError(f"{name} must be a positive integer, got {value!r}")
    return int(epochs) * int(cycles) * int(rollout)


class DDPGHooks(OffPolicyHooks[Model]):
    """DDPG's part of the off-policy loop: noisy actions trained before acting, parameter
    noise adapted, observation statistics, episode-start exploration, MPI sync checks."""

    loss_names = LOSSES

    def __init__(self, model: Model):
        super().__init__(model, model.config.actor_lr)
        self.comm = model.comm

    def first_stats(self, lr: float) -> dict[str, float]:
        return {"learning_rate": lr, "critic_learning_rate": self.model.config.critic_lr}

    def random_actions(self) -> np.ndarray:
        return self.model.random_actions()

    def act(self, obs: Any, t: int) -> np.ndarray:
        return self.model.act(obs, explore=True)[0]

    def train_and_act(self, obs: Any, phases: int, lr: float
                      ) -> tuple[dict[str, float], np.ndarray]:
        # The latest value of each statistic is reported (actor_loss only comes from calls
        # that made an actor step).
        return self.model.train_and_act(obs, lr, self.model.config.critic_lr, phases)

    def to_env(self, actions: np.ndarray) -> np.ndarray:
        return self.model.to_env(actions)

    def n_updates(self) -> int:
        return self.model.grad_steps

    def before_step(self, t: int, warming_up: bool, stored: int) -> None:
        model = self.model
        if model.param_noise is not None and not warming_up and stored >= model.batch_size \
                and crossings(t + self.num_envs, self.num_envs,
                              model.config.param_noise_adaption_interval):
            model.adapt_param_noise()

    def after_step(self, obs: Any, step: dict[str, Any], t: int) -> None:
        assert self.loop is not None
        if self.model.config.render:
            self.loop.env.render()
        self.model.update_obs_stats(obs)
        self.model.end_episodes(step["dones"])
        if self.comm is not None and (self.loop.iterations + 1) % SYNC_CHECK_INTERVAL == 0:
            check_synced(self.model.synced_variables, self.comm)

    def extra_stats(self) -> dict[str, float]:
        noise = self.model.param_noise
        if noise is None:
            return {}
        return {"param_noise_stddev": noise.current_stddev,
                "param_noise_distance": self.model.param_noise_distance}


def train(model: Model, env: VecEnv, total_timesteps: int, options: LoopOptions) -> Model:
    """Run DDPG's loop on ``model`` for ``total_timesteps`` more env steps (with ``resume``:
    up to that many in all). Under MPI every worker runs it on its own env and buffer."""
    if model.comm is not None and (options.checkpoint_interval or options.resume):
        # Each worker has its own buffer and generators: one file cannot resume them all.
        raise RLBaseError(f"ddpg: checkpoint_interval and resume are not supported under MPI "
                          f"(got checkpoint_interval={options.checkpoint_interval!r}, "
                          f"resume={options.resume!r}); run with one process")
    # Before the loop: with resume it replaces these fresh draws by the checkpoint's.
    model.reset_exploration()
    run_off_policy(DDPGHooks(model), env, total_timesteps, options)
    return model

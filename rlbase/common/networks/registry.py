"""The network registry: a name (or a callable) -> a Keras layer mapping observations to a latent.

Feed-forward networks take a batch ``[B, *obs_shape]`` of float observations. Recurrent
networks (``layer.recurrent is True``) take ``[B, T, *obs_shape]`` sequences, a state
``[B, state_size]`` and ``[B, T]`` episode-start flags that reset the state, and return
``([B, T, H], new_state)``. Register your own with ``@register("name")``.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

import keras
import numpy as np
import tensorflow as tf
from keras import layers

from rlbase.common.errors import RLBaseError
from rlbase.common.io.memory import check_fits
from rlbase.common.precision import network_dtype_policy, to_float32
from rlbase.common.tf_util import batch_blocks, split_rows

NetworkBuilder = Callable[..., keras.layers.Layer]
_REGISTRY: dict[str, NetworkBuilder] = {}


#: Training memory per parameter: the weight, its gradient and two optimizer slots (Adam's
#: moments; RMSProp has one), 4 bytes each.
TRAINING_BYTES_PER_PARAMETER = 16


class Dense(layers.Dense):
    """Keras' Dense layer that, before allocating its weights, refuses in one line a layer
    whose training memory cannot fit: a Discrete(1e8) action or observation space (its
    one-hot inputs or its logits) fails at once instead of after minutes of building."""

    def build(self, input_shape: Any) -> None:
        inputs = int(input_shape[-1])
        try:
            check_fits(f"dense layer '{self.name}' ({inputs:,} inputs x {self.units:,} outputs)",
                       (inputs + 1) * self.units, TRAINING_BYTES_PER_PARAMETER,
                       "parameters (weight, gradient, 2 optimizer slots)",
                       "use a smaller action or observation space, or narrower layers")
        except RLBaseError as exc:
            # Keras wraps an error raised inside a layer's call in lines of call context,
            # unless this marker says the context is already there: keep the one line.
            exc._keras_call_info_injected = True  # type: ignore[attr-defined]
            raise
        super().build(input_shape)


def register(name: str) -> Callable[[NetworkBuilder], NetworkBuilder]:
    """Decorator: make a network builder available by ``name`` (CLI ``--network=name``)."""

    def add(builder: NetworkBuilder) -> NetworkBuilder:
        _REGISTRY[name] = builder
        return builder

    return add


def registered_networks() -> list[str]:
    return sorted(_REGISTRY)


def get_network_builder(name: str | NetworkBuilder) -> NetworkBuilder:
    """The builder registered as ``name``; a callable is returned as it is."""
    if callable(name):
        return name
    if name not in _REGISTRY:
        raise RLBaseError(f"unknown network '{name}'; registered networks: "
                          f"{', '.join(registered_networks())}")
    return _REGISTRY[name]


def network_kwarg_names(name: str | NetworkBuilder) -> list[str]:
    """The keyword arguments a network builder accepts (for checking CLI flags)."""
    params = inspect.signature(get_network_builder(name)).parameters.values()
    return [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def build_network(name: str | NetworkBuilder, **kwargs: Any) -> keras.layers.Layer:
    """Call the builder, turning an unknown keyword into a clear error."""
    builder = get_network_builder(name)
    params = inspect.signature(builder).parameters
    if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(kwargs) - set(params))
        if unknown:
            raise RLBaseError(f"network '{getattr(name, '__name__', name)}' does not take "
                              f"{', '.join(unknown)}; it takes: "
                              f"{', '.join(network_kwarg_names(name)) or 'no arguments'}")
    # Under precision='mixed_bfloat16' (rlbase.common.precision) the layers made here compute
    # in bfloat16 on float32 variables; the registry's networks return float32.
    with network_dtype_policy():
        return builder(**kwargs)


def is_recurrent(network: keras.layers.Layer) -> bool:
    """A network from the registry (or a user's builder) is recurrent when it says so with a
    ``recurrent = True`` attribute (the registry's convention, see this module's docstring)."""
    return bool(getattr(network, "recurrent", False))


def recurrent_state_size(network: keras.layers.Layer) -> int:
    """The width of a recurrent network's state (0 for a feed-forward one)."""
    return int(getattr(network, "state_size", 0)) if is_recurrent(network) else 0


def ortho(scale: float = np.sqrt(2)) -> keras.initializers.Initializer:
    return keras.initializers.Orthogonal(gain=scale)


# Baselines' README writes activations as TF functions (--activation=tf.nn.relu): the name
# after the module path is the Keras activation of the same name.
_MODULE_PREFIXES = ("tf.nn.", "tf.math.", "tf.keras.activations.", "keras.activations.", "tf.")


def _activation(name: str | Callable) -> Callable:
    if callable(name):
        return name
    for prefix in _MODULE_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    try:
        return keras.activations.get(name)
    except ValueError:
        raise RLBaseError(f"unknown activation '{name}'; use a keras activation name such as "
                          "tanh, relu, elu, gelu, or a callable") from None


class Composite:
    """Mixin for a Keras layer or model whose weights are created in ``__init__`` or by its
    sub-layers: it counts as built once called, and its sub-layers build themselves at that
    first call. Without it Keras first traces ``call`` symbolically to build it, which costs
    0.1-0.7 s per layer and is thrown away when the first call is eager (every model here is
    built by an eager call on dummy observations)."""

    built: bool

    def build(self, input_shape: Any) -> None:
        self.built = True


class MLP(Composite, keras.layers.Layer):
    """Fully connected layers on flattened observations: ``num_layers`` of ``num_hidden``
    units, or one layer per entry of ``sizes`` when given."""

    def __init__(self, num_layers: int, num_hidden: int, activation: str | Callable,
                 layer_norm: bool, sizes: Sequence[int] | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        if sizes is None:
            if num_layers < 0 or num_hidden < 1:
                raise RLBaseError(f"mlp needs num_layers >= 0 and num_hidden >= 1, got "
                                  f"num_layers={num_layers}, num_hidden={num_hidden}")
            sizes = [num_hidden] * num_layers
        elif any(int(n) < 1 for n in sizes):
            raise RLBaseError(f"layer sizes must be positive integers, got {list(sizes)}")
        self.flatten = layers.Flatten()
        self.hidden = [Dense(int(n), kernel_initializer=ortho()) for n in sizes]
        self.norms = [layers.LayerNormalization() for _ in sizes] if layer_norm else []
        self.act = _activation(activation)
        self.activation_name = activation if isinstance(activation, str) else None
        self.recurrent = False

    def call(self, x: tf.Tensor) -> tf.Tensor:
        h = self.flatten(x)
        for i, dense in enumerate(self.hidden):
            h = dense(h)
            if self.norms:
                h = self.norms[i](h)
            h = self.act(h)
        return to_float32(h)


@register("mlp")
def mlp(num_layers: int = 2, num_hidden: int = 64, activation: str | Callable = "tanh",
        layer_norm: bool = False, layer_sizes: Sequence[int] | None = None
        ) -> keras.layers.Layer:
    """``num_layers`` fully connected layers of ``num_hidden`` units (64x64 tanh by default),
    or one layer per entry of ``layer_sizes`` (e.g. ``(400, 300)``)."""
    return MLP(num_layers, num_hidden, activation, layer_norm,
               sizes=None if layer_sizes is None else [int(n) for n in layer_sizes])


class SimBa(Composite, keras.layers.Layer):
    """SimBa (Lee et al., ICLR 2025): a linear embedding to ``num_hidden`` units, then
    ``num_blocks`` pre-norm residual blocks ``x + W2 relu(W1 LayerNorm(x))`` (W1 widens to
    ``expansion * num_hidden`` units), then a final LayerNorm. The paper's third part, running
    observation statistics, is rlbase's observation normalization (``normalize=True`` or a
    VecNormalize), which also reaches the replay buffer and evaluation."""

    def __init__(self, num_blocks: int, num_hidden: int, expansion: int, **kwargs: Any):
        super().__init__(**kwargs)
        if num_blocks < 1 or num_hidden < 1 or expansion < 1:
            raise RLBaseError(f"simba needs num_blocks, num_hidden and expansion >= 1, got "
                              f"num_blocks={num_blocks}, num_hidden={num_hidden}, "
                              f"expansion={expansion}")
        self.flatten = layers.Flatten()
        self.embed = Dense(num_hidden, kernel_initializer=ortho(1.0))
        he = keras.initializers.HeNormal
        self.blocks = [(layers.LayerNormalization(),
                        Dense(expansion * num_hidden, kernel_initializer=he()),
                        Dense(num_hidden, kernel_initializer=he())) for _ in range(num_blocks)]
        self.norm = layers.LayerNormalization()
        self.recurrent = False

    def call(self, x: tf.Tensor) -> tf.Tensor:
        h = self.embed(self.flatten(x))
        for norm, widen, narrow in self.blocks:
            h = h + narrow(tf.nn.relu(widen(norm(h))))
        return to_float32(self.norm(h))


@register("simba")
def simba(num_blocks: int = 2, num_hidden: int = 256, expansion: int = 4
          ) -> keras.layers.Layer:
    """SimBa's residual, layer-normalized blocks (:class:`SimBa`): ``num_blocks`` blocks of
    width ``num_hidden`` (256x2 by default, widened 4x inside each block)."""
    return SimBa(int(num_blocks), int(num_hidden), int(expansion))


class ConvStack(Composite, keras.layers.Layer):
    """Convolutions (filters, kernel, stride), flattened, then optional dense layers.

    pad: 'VALID' (Baselines' default: no padding) or 'SAME' (keeps small images, such as
    28x28, from shrinking to nothing under the Nature strides).
    layer_norm: layer-normalize each convolution's output (over height, width and channels)
    and each dense layer's, before the activation (PQN's convnets).

    Each frame's features depend on that frame alone, so under the 'convnet' thread plan the
    batch is computed in one block per core, side by side (:func:`split_rows`).
    """

    def __init__(self, convs: Sequence[tuple[int, int, int]], dense: Sequence[int],
                 activation: str | Callable = "relu", pad: str = "VALID",
                 layer_norm: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        padding = _padding(pad)
        self.convs = [layers.Conv2D(f, k, strides=s, padding=padding, kernel_initializer=ortho())
                      for f, k, s in convs]
        self.flatten = layers.Flatten()
        self.dense = [Dense(n, kernel_initializer=ortho()) for n in dense]
        self.conv_norms = [layers.LayerNormalization(axis=(-3, -2, -1)) for _ in convs] \
            if layer_norm else []
        self.dense_norms = [layers.LayerNormalization() for _ in dense] if layer_norm else []
        self.act = _activation(activation)
        self.recurrent = False

    def call(self, x: tf.Tensor) -> tf.Tensor:
        return split_rows(self._features, x, batch_blocks())

    def _features(self, x: tf.Tensor) -> tf.Tensor:
        h = x
        for i, conv in enumerate(self.convs):
            h = conv(h)
            h = self.act(self.conv_norms[i](h) if self.conv_norms else h)
        h = self.flatten(h)
        for i, dense in enumerate(self.dense):
            h = dense(h)
            h = self.act(self.dense_norms[i](h) if self.dense_norms else h)
        return to_float32(h)


def _padding(pad: str) -> str:
    if str(pad).upper() not in ("VALID", "SAME"):
        raise RLBaseError(f"pad must be 'VALID' or 'SAME', got {pad!r}")
    return str(pad).lower()


NATURE_CONVS = ((32, 8, 4), (64, 4, 2), (64, 3, 1))


@register("cnn")
def cnn(num_hidden: int = 512, activation: str | Callable = "relu", pad: str = "VALID",
        layer_norm: bool = False) -> keras.layers.Layer:
    """The DQN Nature convolutions followed by a ``num_hidden`` dense layer."""
    return ConvStack(NATURE_CONVS, [num_hidden], activation, pad, layer_norm)


@register("cnn_small")
def cnn_small(num_hidden: int = 128, activation: str | Callable = "relu", pad: str = "VALID",
              layer_norm: bool = False) -> keras.layers.Layer:
    """A lighter convnet: 8 filters 8x8/4, 16 filters 4x4/2, one dense layer."""
    return ConvStack(((8, 8, 4), (16, 4, 2)), [num_hidden], activation, pad, layer_norm)


@register("minatar_cnn")
def minatar_cnn(num_hidden: int = 128, activation: str | Callable = "relu", pad: str = "VALID",
                layer_norm: bool = False) -> keras.layers.Layer:
    """MinAtar's network (Young & Tian 2019, its examples/dqn.py): one 3x3 convolution of 16
    filters, stride 1, on the 10x10xC frame, then one ``num_hidden`` dense layer. The Nature
    ``cnn``'s 8x8/4 first layer would leave nothing of a 10x10 frame."""
    return ConvStack(((16, 3, 1),), [num_hidden], activation, pad, layer_norm)


@register("conv_only")
def conv_only(convs: Sequence[tuple[int, int, int]] = NATURE_CONVS,
              activation: str | Callable = "relu", pad: str = "VALID",
              layer_norm: bool = False) -> keras.layers.Layer:
    """Convolutions only, flattened: the torso DQN puts its own dense heads on."""
    return ConvStack([(int(f), int(k), int(s)) for f, k, s in convs], [], activation, pad,
                     layer_norm)


class LSTMCore(Composite, keras.layers.Layer):
    """An LSTM over a feature extractor's output whose state resets where an episode starts.

    State is ``[B, 2 * nlstm]`` (cell and hidden concatenated), so every policy stores one array.
    The recurrence runs in float32 whatever the precision (its state is carried from call to
    call); under mixed precision the torso and the input projection compute in bfloat16.
    """

    def __init__(self, torso: keras.layers.Layer | None, nlstm: int, layer_norm: bool,
                 **kwargs: Any):
        super().__init__(**{"dtype": "float32", **kwargs})
        self.torso = torso
        self.nlstm = nlstm
        self.layer_norm = layer_norm
        self.recurrent = True
        self.state_size = 2 * nlstm
        self.flatten = layers.Flatten()
        # The input projection is a Dense sub-layer so it sizes itself on first call.
        self.input_proj = Dense(4 * nlstm, kernel_initializer=ortho(1.0))
        self.wh = self.add_weight(shape=(nlstm, 4 * nlstm), initializer=ortho(1.0), name="wh")
        self.norms = [layers.LayerNormalization(dtype="float32") for _ in range(5)] \
            if layer_norm else []

    def _features(self, x: tf.Tensor) -> tf.Tensor:
        return self.flatten(self.torso(x) if self.torso is not None else x)

    def call(self, x: tf.Tensor, state: tf.Tensor, episode_starts: tf.Tensor
             ) -> tuple[tf.Tensor, tf.Tensor]:
        batch, steps = tf.shape(x)[0], tf.shape(x)[1]
        flat = tf.reshape(x, tf.concat([[batch * steps], tf.shape(x)[2:]], axis=0))
        feats = self._features(flat)
        # Input projection for all steps at once; only the recurrence is sequential.
        xw = tf.reshape(to_float32(self.input_proj(feats)), [batch, steps, 4 * self.nlstm])
        c0, h0 = tf.split(state, 2, axis=1)

        def step(carry: tuple[tf.Tensor, tf.Tensor], elems: tuple[tf.Tensor, tf.Tensor]
                 ) -> tuple[tf.Tensor, tf.Tensor]:
            c, h = carry
            xw_t, start_t = elems
            keep = 1.0 - start_t[:, None]
            c, h = c * keep, h * keep
            z = xw_t + tf.matmul(h, self.wh)
            i, f, o, u = tf.split(z, 4, axis=1)
            if self.layer_norm:
                i, f, o, u = (self.norms[k](v) for k, v in enumerate((i, f, o, u)))
            c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(u)
            cn = self.norms[4](c) if self.layer_norm else c
            h = tf.sigmoid(o) * tf.tanh(cn)
            return c, h

        starts = tf.cast(episode_starts, tf.float32)
        if x.shape[1] == 1:  # one step (an exported policy acting): no loop to convert
            c, h = step((c0, h0), (xw[:, 0], starts[:, 0]))
            return h[:, None], tf.concat([c, h], axis=1)
        cs, hs = tf.scan(step, (tf.transpose(xw, [1, 0, 2]), tf.transpose(starts)),
                         initializer=(c0, h0))
        latent = tf.transpose(hs, [1, 0, 2])
        return latent, tf.concat([cs[-1], hs[-1]], axis=1)

    def initial_state(self, batch: int) -> np.ndarray:
        return np.zeros((batch, self.state_size), np.float32)


@register("lstm")
def lstm(nlstm: int = 128, layer_norm: bool = False) -> keras.layers.Layer:
    """An LSTM of ``nlstm`` units on the flattened observation."""
    return LSTMCore(None, nlstm, layer_norm)


@register("lnlstm")
def lnlstm(nlstm: int = 128) -> keras.layers.Layer:
    """A layer-normalized LSTM on the flattened observation."""
    return LSTMCore(None, nlstm, True)


@register("cnn_lstm")
def cnn_lstm(nlstm: int = 128, layer_norm: bool = False, num_hidden: int = 512,
             pad: str = "VALID") -> keras.layers.Layer:
    """The Nature convnet followed by an LSTM."""
    return LSTMCore(ConvStack(NATURE_CONVS, [num_hidden], pad=pad), nlstm, layer_norm)


@register("cnn_lnlstm")
def cnn_lnlstm(nlstm: int = 128, num_hidden: int = 512, pad: str = "VALID"
               ) -> keras.layers.Layer:
    """The Nature convnet followed by a layer-normalized LSTM."""
    return LSTMCore(ConvStack(NATURE_CONVS, [num_hidden], pad=pad), nlstm, True)

"""RAdam (Liu et al., 2020, "On the Variance of the Adaptive Learning Rate and Beyond"), the
optimizer of PQN's paper; Keras has none."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf


class RAdam(keras.optimizers.Adam):
    """Adam whose adaptive step is rectified while its second moment rests on few samples.

    With rho_inf = 2 / (1 - beta_2) - 1 and rho_t = rho_inf - 2 t beta_2^t / (1 - beta_2^t)
    (the length of the moving average's approximating simple average), step t moves by
    ``lr * m_hat`` (momentum SGD) while rho_t <= 5, else by
    ``lr * m_hat * r_t * sqrt(1 - beta_2^t) / (sqrt(v_t) + epsilon)`` with the rectifier
    r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)),
    where m_hat = m_t / (1 - beta_1^t) and m_t, v_t are Adam's moments. epsilon defaults to
    1e-8 (PyTorch's and the paper's; Keras' Adam has 1e-7).
    """

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-8, **kwargs: Any):
        super().__init__(learning_rate=learning_rate, beta_1=beta_1, beta_2=beta_2,
                         epsilon=epsilon, **kwargs)

    def update_step(self, gradient: tf.Tensor, variable: Any, learning_rate: Any) -> None:
        dtype = variable.dtype
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        g = tf.cast(gradient, dtype)
        beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
        m.assign(beta_1 * m + (1.0 - beta_1) * g)
        v.assign(beta_2 * v + (1.0 - beta_2) * tf.square(g))
        # The step's scalars in float64: rho_t is a difference of two numbers near
        # 2 / (1 - beta_2), which float32 leaves off by about 1% in the first rectified steps.
        t = tf.cast(self.iterations + 1, tf.float64)
        b1, b2 = tf.cast(self.beta_1, tf.float64), tf.cast(self.beta_2, tf.float64)
        b2_t = tf.pow(b2, t)
        rho_inf = 2.0 / (1.0 - b2) - 1.0
        rho_t = rho_inf - 2.0 * t * b2_t / (1.0 - b2_t)
        # Clamped at 0 so the branch not taken (rho_t <= 5) stays finite.
        rectifier = tf.sqrt(tf.maximum((rho_t - 4.0) * (rho_t - 2.0) * rho_inf, 0.0)
                            / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t))
        m_hat = m / tf.cast(1.0 - tf.pow(b1, t), dtype)
        adaptive = tf.cast(tf.sqrt(1.0 - b2_t), dtype) / (tf.sqrt(v) +
                                                           tf.cast(self.epsilon, dtype))
        step = tf.where(rho_t > 5.0, m_hat * tf.cast(rectifier, dtype) * adaptive, m_hat)
        variable.assign_sub(tf.cast(learning_rate, dtype) * step)

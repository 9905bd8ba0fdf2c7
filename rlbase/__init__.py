"""rlbase: reinforcement-learning algorithms on TensorFlow 2 and gymnasium."""

import os as _os

# Before TensorFlow is first imported: keep its C++ start-up chatter off the console, and
# make sure Keras 3 runs on TensorFlow.
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
_os.environ.setdefault("KERAS_BACKEND", "tensorflow")

__version__ = "0.1.0"

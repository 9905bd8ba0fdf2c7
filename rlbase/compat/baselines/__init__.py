"""OpenAI Baselines' forms that rlbase's core does not speak: deepq's ``callback(lcl, glb)``
(:mod:`~rlbase.compat.baselines.callback_form`, adapted by
:mod:`~rlbase.compat.baselines.deepq_callback`) and a ``baselines.deepq``-shaped module
(:mod:`~rlbase.compat.baselines.deepq`)."""

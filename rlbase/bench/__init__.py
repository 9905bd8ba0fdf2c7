"""Benchmarks: training steps/s and the return reached, beside the peer library.

    python -m rlbase.bench run --alg=a2c --env=CartPole-v1 --num_timesteps=5e4 --seed=0
    python -m rlbase.bench compare --alg=a2c --env=CartPole-v1 --num_timesteps=5e4 \\
        --peer_python=/tmp/sb3env/bin/python --anchors=../shared/anchors
    python -m rlbase.bench suite --preset=classic --jobs=2
    python -m rlbase.bench report bench_results/classic
    python -m rlbase.bench tables --check
    python -m rlbase.bench export-speed --network=mlp --sb3_python=/tmp/sb3env/bin/python

``run`` prints one line (and appends a JSON record to ``--out`` when given). ``compare`` runs
rlbase and then the peer's anchor script at the same settings, one after the other, and prints
the ratio of steps/s: the machine is shared and noisy, so only ratios measured together mean
anything. ``suite`` runs a preset of rows in worker processes and ``report`` rebuilds its
tables and plots. ``export-speed`` times exported policies (TFLite, ONNX) against
``predict`` and SB3's ``policy.predict`` (rlbase/docs/export.md).

Modules: ``settings`` (the peer-matching settings), ``run`` (one training run, the peer's
script), ``suite`` (presets, worker processes), ``report`` (tables, plots, README section),
``export_speed`` (exported policies' latency),
``stats`` (IQM, bootstrap confidence intervals, performance profiles, probability of
improvement: rliable's definitions in numpy), ``intervals`` (the report's sections built from
``stats``), ``provenance`` (what every suite result records about its code, machine and run),
``tables`` (the docs' results tables written from the committed result files: ``python -m
rlbase.bench tables [--check]``), ``__main__`` (the command line). Nothing imports
``__main__``: no cycle.
"""

"""rlbase: reinforcement-learning algorithms on TensorFlow 2 and gymnasium."""

from setuptools import find_packages, setup

extras = {
    "atari": ["ale-py>=0.9", "opencv-python-headless"],
    "mpi": ["mpi4py>=3.1", "mpich"],
    "plot": ["matplotlib", "pandas"],
    # The tests cover Atari, videos and MPI too, so they need those extras' packages.
    "test": ["pytest>=7", "ruff", "matplotlib", "pandas", "gymnasium[classic-control]>=1.0",
             "ale-py>=0.9", "opencv-python-headless", "mpi4py>=3.1", "mpich"],
}
extras["all"] = sorted({dep for deps in extras.values() for dep in deps})

setup(
    name="rlbase",
    version="0.1.0",
    description="Reinforcement-learning algorithms (A2C, ACER, DDPG/TD3, DQN, ES, PPO) "
                "on TensorFlow 2 and gymnasium, in the Baselines style",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="MIT",
    packages=find_packages(include=["rlbase", "rlbase.*"]),
    python_requires=">=3.10",
    install_requires=[
        "tensorflow>=2.16",
        "gymnasium[classic-control]>=1.0",
        "numpy",
        "cloudpickle",
        "tqdm",
    ],
    extras_require=extras,
    entry_points={"console_scripts": ["rlbase=rlbase.cli:cli"]},
)

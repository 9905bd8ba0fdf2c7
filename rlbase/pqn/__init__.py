"""PQN: parallel Q-learning with lambda-returns, no replay buffer and no target network."""

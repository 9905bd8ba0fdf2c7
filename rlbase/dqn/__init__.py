"""Deep Q-learning (DQN) with double Q, dueling heads, prioritized replay and parameter noise."""

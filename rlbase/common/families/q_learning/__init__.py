"""What the Q-learning algorithms (DQN, QR-DQN) share: the Q-network and its numpy mirror, the
replay buffer, the model (acting, the compiled update loop, target copies, saving and
resuming), the loop hooks (epsilon-greedy exploration, target updates) and Baselines'
best-model rule. Each algorithm adds its loss and what only it has."""

"""Real local generation with MLX / mlx-lm; imported only when --backend mlx is chosen."""

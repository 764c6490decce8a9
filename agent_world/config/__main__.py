"""``python -m agent_world.config``: print config.example.yaml (every setting, its default
and meaning)."""

from agent_world.config.load import example_yaml

print(example_yaml(), end="")

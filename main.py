"""Run Agent World: ``python main.py --help``."""

from agent_world.launch import main

if __name__ == "__main__":
    raise SystemExit(main())

"""The angel: new abilities written at run time, by an LLM or from templates.

An outer layer: it depends on the core and the sandbox; the core never imports it. Replay
and resume never call it: accepted abilities come back from the logged inputs.
"""

from agent_world.angel.angel import Angel
from agent_world.angel.generators import (
    AbilityRequest,
    FallbackGenerator,
    Generator,
    LLMGenerator,
    TextModel,
    build_prompt,
    extract_code,
)
from agent_world.angel.templates import TemplateGenerator

__all__ = ["AbilityRequest", "Angel", "FallbackGenerator", "Generator", "LLMGenerator",
           "TemplateGenerator", "TextModel", "build_prompt", "extract_code"]

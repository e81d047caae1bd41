"""Model providers. Importing this package never imports a provider SDK; adapters load on first use."""

from .base import Model, ModelRequest, ModelResponse, StopReason

__all__ = ["Model", "ModelRequest", "ModelResponse", "StopReason"]

"""`make_model` builds the adapter of the `provider` fixture, which each test module defines, against the fake LLM."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.fakes.fake_llm import FakeLLM
from tests.models.adapters import Adapter, MakeModel, Provider


@pytest.fixture
async def make_model(fake: FakeLLM, provider: Provider) -> AsyncIterator[MakeModel]:
    models: list[Adapter] = []

    def make(**overrides: Any) -> Adapter:
        models.append(provider.adapter(**provider.options(fake.url, **overrides)))
        return models[-1]

    yield make
    for model in models:
        await model.aclose()

"""An OpenAI-compatible chat endpoint as runner (Ollama, llama-server, vLLM, LM Studio).

Nothing is sent anywhere unless `[runner] options.endpoint` is set. When the endpoint
times out, is down, or answers without a valid `S M W ACTION` line, the bundled model
recommends instead and the record says why (`fallback_reason`).
"""

from __future__ import annotations

import logging
from typing import Any

import httpx

from bridge.runner.base import Recommendation, available_actions
from bridge.runner.prompt import SYSTEM, build_prompt, parse_answer

log = logging.getLogger("rhythm_bridge.runner.openai")
KEYRING_SERVICE = "rhythm-bridge"
KEYRING_USER = "runner-openai"


def _api_key() -> str | None:
    """An API key for endpoints that want one, from the keyring only (never the config)."""
    try:
        import keyring

        return keyring.get_password(KEYRING_SERVICE, KEYRING_USER)
    except Exception:  # no keyring backend on a headless box: local servers need no key
        return None


class OpenAIRunner:
    name = "openai"

    def __init__(
        self,
        endpoint: str = "",
        model: str = "",
        *,
        timeout: float = 30.0,
        max_tokens: int = 512,
        temperature: float = 0.2,
        fallback: str = "bundled",
    ) -> None:
        if not endpoint or not model:
            raise ValueError(
                "runner 'openai' needs options.endpoint (e.g. http://localhost:11434/v1) "
                "and options.model"
            )
        self.url = endpoint.rstrip("/") + "/chat/completions"
        self.model, self.timeout = model, float(timeout)
        self.max_tokens, self.temperature = int(max_tokens), float(temperature)
        self.version = model
        self._fallback_name = fallback
        self._fallback: Any = None

    def _ask(self, prompt: str) -> str:
        headers = {}
        key = _api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        body = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": prompt},
            ],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "stream": False,
        }
        response = httpx.post(self.url, json=body, headers=headers, timeout=self.timeout)
        response.raise_for_status()
        return response.json()["choices"][0]["message"]["content"] or ""

    def recommend(
        self, observation: dict[str, Any], history: list[dict[str, Any]]
    ) -> Recommendation:
        try:
            text = self._ask(build_prompt(observation, history))
        except httpx.TimeoutException:
            return self._fall_back(observation, history, f"timed out after {self.timeout:g}s")
        except httpx.HTTPStatusError as err:
            return self._fall_back(
                observation, history, f"HTTP {err.response.status_code} from {self.url}"
            )
        except httpx.HTTPError as err:
            return self._fall_back(observation, history, f"cannot reach {self.url}: {err}")
        except (ValueError, KeyError, IndexError, TypeError):
            return self._fall_back(observation, history, "response is not a chat completion")
        parsed = parse_answer(text)
        if parsed is None:
            return self._fall_back(observation, history, "no valid 'S M W ACTION' line in answer")
        belief, action, reason = parsed
        if action not in available_actions(observation):
            return self._fall_back(observation, history, f"{action} does not fit the calendar")
        return Recommendation(
            action,
            [round(b, 3) for b in belief],
            (reason or f"{self.model} recommends {action}")[:200],
            self.name,
            self.version,
        )

    def _fall_back(
        self, observation: dict[str, Any], history: list[dict[str, Any]], reason: str
    ) -> Recommendation:
        from dataclasses import replace

        from bridge.runner import load_runner

        log.warning("openai runner: %s; using %s", reason, self._fallback_name)
        if self._fallback is None:
            self._fallback = load_runner(self._fallback_name)
        rec = self._fallback.recommend(observation, history)
        return replace(rec, fallback_reason=f"openai runner ({self.model}): {reason}")

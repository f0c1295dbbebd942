"""HTTP runtimes: model APIs (Anthropic Messages, OpenAI Responses and Chat Completions)
and Ollama, made agents by Relay's own loop (:mod:`relay.runtimes.http.loop`)."""

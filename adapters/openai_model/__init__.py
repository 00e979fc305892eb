"""The chat-model and transcription ports over the openai SDK (OpenAI, Ollama, vLLM, llama.cpp and Whisper servers)."""

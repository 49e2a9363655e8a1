"""Model providers: the interface in base.py, the offline one in local/, a chat model in mistral.py."""

"""Finding and downloading models from Hugging Face (Qt-free): search, a repository's files by
quantization, Laya's memory estimate against this machine, resumable verified downloads, and
registering a finished download in models.yaml."""

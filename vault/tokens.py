"""API token secrets: the prefix agents see and the hash stored in place of the secret."""

import hashlib

TOKEN_PREFIX = "mem_"


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", errors="surrogatepass")).hexdigest()

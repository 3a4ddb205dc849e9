"""Settings of clgrad.compile (torch._dynamo.config's names where torch has one)."""

# Recordings a compiled function keeps (one per argument signature) and times one signature may
# be recorded again before the function runs eagerly (torch's default is 8 too).
cache_size_limit = 8

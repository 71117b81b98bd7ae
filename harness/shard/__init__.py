"""Sharding: one runner's results as one JSON file, written durably and read strictly.

* :mod:`~harness.shard.format`: the shard's schema, runner description, file name, atomic
  JSON write, and strict reading (``harness/schemas/shard.schema.json``).
* :mod:`~harness.shard.save`: :class:`~harness.shard.save.ShardWriter`, which merges every save
  with the shard on disk under a file lock, so nothing observed is lost.
* :mod:`~harness.shard.jsonfile`: reading a JSON file someone else wrote, with limits.
"""

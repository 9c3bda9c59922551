"""The remote backend: a model served by an OpenAI-compatible engine on another machine.

``connection`` speaks HTTP (timeouts, TLS, size caps, cancel from another thread), ``sse`` cuts a
byte stream into Server-Sent Events, ``server`` learns once what a server accepts, ``prompts``
builds request bodies, ``pieces`` splits received text into draft tokens, and ``backend`` turns
streamed chunks into drafts.
"""

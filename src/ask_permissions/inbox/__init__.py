"""The person's side: what an answer may be (``_answers``), and the web inbox over a store (``_app``,
``_page``, ``_server``, the ``static`` assets; extra ``[inbox]``, imported only when the inbox is started).

Importing this package imports neither Starlette nor uvicorn.
"""

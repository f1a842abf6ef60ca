"""Telling a person that a call waits: ``_webhook`` (``WebhookNotifier``, signed JSON events POSTed in the
background). May import only the package's leaf modules and the queue."""

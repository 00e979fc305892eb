"""WhatsApp through Twilio: a signed webhook in, the REST API out."""

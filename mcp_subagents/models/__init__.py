"""Model providers. Importing this package never imports a provider SDK, nor the conversation model: adapters load
on first use, and the server starts without them (`models.base` holds the `Model` protocol)."""

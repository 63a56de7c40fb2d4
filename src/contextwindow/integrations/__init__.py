"""Adapters for the frameworks agents are built with.

Each framework has a module of its own (``contextwindow.integrations.langchain``,
``.pydantic_ai``, ``.openai_agents``, ``.litellm``) that imports the framework
lazily and ships as an extra (``pip install 'contextwindow[langchain]'``, ...).
Importing this package imports no framework.
"""

"""The model adapters: one ``anthropic`` client factory, structured calls and the default model,
behind the Summarizer, Reflector and PatternExtractor protocols of the layers below."""

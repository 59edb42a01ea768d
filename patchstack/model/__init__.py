"""Pure models: values and the rules over them. Nothing here runs git or touches files."""

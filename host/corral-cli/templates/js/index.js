// {{name}}: a corral tool. Each defineTool() is one tool: `description` is
// what the model reads, and `parameters` is the JSON Schema of its arguments.
import { defineTool, plugin, InvalidArguments, Output, Part } from 'corral-tool';

const reverse = defineTool({
  name: '{{tool}}',
  description: 'Reverse a text, character by character.',
  parameters: { text: { type: 'string', description: 'The text to reverse.' } },
  category: 'text',
  keywords: ['reverse', 'example'],
  idempotent: true,
}, ({ text }) => {
  if (!text) throw new InvalidArguments('`text` is empty: give some text to reverse');
  const chars = Array.from(text);
  const reversed = chars.reverse().join('');
  // A result of parts: a sentence for the model, and the structured data
  // (which plans reference with $ref). A plain object return is one JSON part.
  return new Output(
    Part.text(`Reversed: ${reversed}`),
    Part.json({ reversed, characters: chars.length }),
  );
});

export const tool = plugin(reverse);

"""The retrieve function: the hybrid search over the LanceDB index, for RETRIEVAL and CODE_GENERATION turns.

As a Lambda: `functions.retrieve.app.handler` (API Gateway events and Step Functions task payloads).
As a container: `uvicorn functions.retrieve.app:app`. All logic lives in the `assist` library.
"""

from assist.serverless.lambda_entry import LambdaFunction

function = LambdaFunction.from_env("retrieve")
handler = function.handler
app = function.app

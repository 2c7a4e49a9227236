// Package protocol translates between HTTP and the typed vocabulary of
// package api, in both wire protocols SQS speaks:
//
//   - AWS JSON 1.0: a POST whose X-Amz-Target header names the action
//     ("AmazonSQS.SendMessage") and whose body is the JSON of the request;
//     results are JSON, errors carry their code in "__type" and, for the
//     clients that want the AWS Query codes, in the x-amzn-query-error header.
//   - AWS Query: a form (POST body and/or URL query string) with an Action
//     parameter and the request's members under the names, locationName and
//     flattened traits of the Query model; results and errors are XML.
//
// Decode turns a request into one typed api.Request, whichever protocol it
// came in, so that validation happens once, on the typed request.
// WriteResponse and WriteError encode a typed result or an *api.Error back in
// the request's protocol. The package knows nothing but net/http and api.
package protocol

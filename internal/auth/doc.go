// Package auth decides who is asking and what they may do: SigV4
// verification of requests, the credentials of accounts, and queue policies.
package auth

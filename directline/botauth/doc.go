// Package botauth holds the credentials between the service and a bot (Bot Framework
// authentication, DIRECTLINE.md §2.1 and §2.3):
//
//   - outbound, service → bot: a TokenSource whose token is sent as "Authorization: Bearer <token>"
//     on every delivery to the bot's messaging endpoint. ClientCredentials mints Azure AD
//     client-credentials tokens with the bot's own app id and password (scope "<appId>/.default"),
//     which botbuilder accepts on its emulator validation path, as the Bot Framework Emulator does.
//   - inbound, bot → service (the Bot Connector routes under serviceUrl): a Validator that checks
//     the bot's RS256 JWT (signature, exp/nbf with clock skew, issuer, audience, app id), or, for
//     bots without an app id, an AllowList of networks allowed to call unauthenticated.
//
// What needs the internet: only bots with an app id. Minting their tokens calls the Azure AD token
// endpoint (DefaultTokenURL, login.microsoftonline.com), and validating their calls fetches the
// signing keys named by the Bot Framework OpenID metadata (BotFrameworkOpenIDMetadataURL). A bot
// with an empty app id needs nothing: botbuilder then neither checks the Authorization header it
// receives nor sends one on its own calls (DIRECTLINE.md §2.3), so the service sends no token
// (nil TokenSource) and admits the bot's calls by AllowList (loopback by default).
package botauth

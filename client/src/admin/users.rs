//! SCRAM users: AlterUserScramCredentials and DescribeUserScramCredentials.

use kwire::messages::{
    alter_user_scram_credentials_request::{ScramCredentialDeletion, ScramCredentialUpsertion},
    describe_user_scram_credentials_request::UserName,
    AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest,
};
use kwire::{ApiKey, Bytes};

use super::{bs, Admin};
use crate::error::{Error, Result};
use crate::future::ClientFuture;
use crate::route::Route;
use crate::sasl::{random_bytes, ScramMechanism};

/// A SCRAM credential change.
#[derive(Debug, Clone)]
pub enum ScramChange {
    /// Create or replace the credential: the salted password is computed here with a random
    /// salt, the password does not leave the client.
    Upsert {
        /// The user.
        user: String,
        /// The mechanism.
        mechanism: ScramMechanism,
        /// The password.
        password: String,
        /// PBKDF2 iterations (Kafka accepts 4096 to 16384).
        iterations: u32,
    },
    /// Delete the credential.
    Delete {
        /// The user.
        user: String,
        /// The mechanism.
        mechanism: ScramMechanism,
    },
}

/// A user's SCRAM credential, as the broker describes it (never the password or salt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScramCredential {
    /// The mechanism (`None`: one this build does not know).
    pub mechanism: Option<ScramMechanism>,
    /// The PBKDF2 iterations.
    pub iterations: i32,
}

impl Admin {
    /// The SCRAM credentials of these users (every user that has one when `users` is
    /// `None`): per user, its credentials or the error (RESOURCE_NOT_FOUND for a user with
    /// none).
    #[allow(clippy::type_complexity)] // the body's own result type, in a future
    pub fn describe_scram_credentials<'a>(&'a self, users: Option<&'a [&'a str]>) -> ClientFuture<'a, Result<Vec<(String, Result<Vec<ScramCredential>>)>>> {
        ClientFuture::boxed(self.describe_scram_credentials_boxed(users))
    }

    async fn describe_scram_credentials_boxed(&self, users: Option<&[&str]>) -> Result<Vec<(String, Result<Vec<ScramCredential>>)>> {
        let request = DescribeUserScramCredentialsRequest {
            users: users.map(|us| us.iter().map(|u| UserName { name: bs(u), ..Default::default() }).collect()),
            ..Default::default()
        };
        let response = self.client.send(Route::Any, request).await?;
        let r = &response;
        Error::check(r.error_code, r.error_message.as_deref(), || "describe SCRAM credentials".into())?;
        Ok(r.results
            .iter()
            .map(|u| {
                let result = Error::check(u.error_code, u.error_message.as_deref(), || format!("describe SCRAM credentials of {}", u.user)).map(|()| {
                    u.credential_infos
                        .iter()
                        .map(|c| ScramCredential {
                            mechanism: [ScramMechanism::Sha256, ScramMechanism::Sha512].into_iter().find(|m| m.kafka_type() == c.mechanism),
                            iterations: c.iterations,
                        })
                        .collect()
                });
                (u.user.to_string(), result)
            })
            .collect())
    }

    /// Creates, replaces or deletes SCRAM credentials (AlterUserScramCredentials); one result
    /// per change.
    pub fn alter_scram_credentials<'a>(&'a self, changes: &'a [ScramChange]) -> ClientFuture<'a, Result<Vec<Result<()>>>> {
        ClientFuture::boxed(self.alter_scram_credentials_boxed(changes))
    }

    async fn alter_scram_credentials_boxed(&self, changes: &[ScramChange]) -> Result<Vec<Result<()>>> {
        let mut request = AlterUserScramCredentialsRequest::default();
        for change in changes {
            match change {
                ScramChange::Upsert { user, mechanism, password, iterations } => {
                    let salt = random_bytes(32).map_err(Error::Config)?;
                    let salted = mechanism.salted_password(password, &salt, *iterations);
                    request.upsertions.push(ScramCredentialUpsertion {
                        name: bs(user),
                        mechanism: mechanism.kafka_type(),
                        iterations: (*iterations).min(i32::MAX as u32) as i32,
                        salt: Bytes::from(salt),
                        salted_password: Bytes::from(salted),
                        ..Default::default()
                    });
                }
                ScramChange::Delete { user, mechanism } => {
                    request.deletions.push(ScramCredentialDeletion { name: bs(user), mechanism: mechanism.kafka_type(), ..Default::default() })
                }
            }
        }
        let response = self.send_controller_retrying(request).await?;
        let r = response;
        // The broker answers one result per user.
        Ok(changes
            .iter()
            .map(|c| {
                let user = match c {
                    ScramChange::Upsert { user, .. } | ScramChange::Delete { user, .. } => user,
                };
                let r = r.results.iter().find(|x| x.user == user[..]).ok_or_else(|| Error::missing(ApiKey::AlterUserScramCredentials, user))?;
                Error::check(r.error_code, r.error_message.as_deref(), || format!("alter SCRAM credentials of {user}"))
            })
            .collect())
    }
}

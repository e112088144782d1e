//! DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554, Kafka's
//! `ScramControlManager`): which mechanisms and iterations each user has, upserted from a salted
//! password and deleted, checked as the controller checks them. SASL uses what they store.

use std::collections::{BTreeMap, BTreeSet};

use kwire::messages::{
    alter_user_scram_credentials_response::AlterUserScramCredentialsResult,
    describe_user_scram_credentials_response::{CredentialInfo, DescribeUserScramCredentialsResult},
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kwire::ErrorCode;

use super::{s, Ctx};
use crate::acl::{op, resource, CLUSTER_NAME};
use crate::scram::{Credential, Mechanism, MAX_ITERATIONS, MIN_ITERATIONS};

pub(super) fn describe(ctx: &Ctx<'_>, req: &DescribeUserScramCredentialsRequest) -> DescribeUserScramCredentialsResponse {
    if !ctx.authorized(op::DESCRIBE, resource::CLUSTER, CLUSTER_NAME) {
        return DescribeUserScramCredentialsResponse {
            error_code: ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0,
            error_message: Some(s("Cluster authorization failed.")),
            ..Default::default()
        };
    }
    let state = ctx.inner.state();
    let info = |creds: &BTreeMap<Mechanism, Credential>| {
        creds.iter().map(|(m, c)| CredentialInfo { mechanism: m.kafka_type(), iterations: c.iterations, ..Default::default() }).collect()
    };
    let results = match req.users.as_deref() {
        // Null or empty: every user with a credential.
        None | Some([]) => {
            state.scram.users.iter().map(|(u, c)| DescribeUserScramCredentialsResult { user: s(u), credential_infos: info(c), ..Default::default() }).collect()
        }
        Some(users) => {
            let mut seen = BTreeMap::new();
            for u in users {
                *seen.entry(u.name.to_string()).or_insert(0) += 1;
            }
            let mut done = BTreeSet::new();
            users
                .iter()
                .filter(|u| done.insert(u.name.to_string()))
                .map(|u| {
                    let name = u.name.to_string();
                    let mut r = DescribeUserScramCredentialsResult { user: u.name.clone(), ..Default::default() };
                    if seen.get(&name).copied().unwrap_or(0) > 1 {
                        r.error_code = ErrorCode::DUPLICATE_RESOURCE.0;
                        r.error_message = Some(s(&format!("Cannot describe SCRAM credentials for the same user twice in a single request: {name}")));
                    } else if let Some(c) = state.scram.users.get(&name) {
                        r.credential_infos = info(c);
                    } else {
                        r.error_code = ErrorCode::RESOURCE_NOT_FOUND.0;
                        r.error_message = Some(s(&format!("Attempt to describe a user credential that does not exist: {name}")));
                    }
                    r
                })
                .collect()
        }
    };
    DescribeUserScramCredentialsResponse { results, ..Default::default() }
}

pub(super) fn alter(ctx: &Ctx<'_>, req: &AlterUserScramCredentialsRequest) -> AlterUserScramCredentialsResponse {
    // Users in request order, each answered once.
    let mut users: Vec<String> = Vec::new();
    for name in req.deletions.iter().map(|d| &d.name).chain(req.upsertions.iter().map(|u| &u.name)) {
        if !users.contains(&name.to_string()) {
            users.push(name.to_string());
        }
    }
    let mut errors: BTreeMap<String, (ErrorCode, String)> = BTreeMap::new();
    let mut fail = |user: &str, code: ErrorCode, why: String| {
        errors.entry(user.to_owned()).or_insert((code, why));
    };
    if !ctx.authorized(op::ALTER, resource::CLUSTER, CLUSTER_NAME) {
        for u in &users {
            fail(u, ErrorCode::CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.".into());
        }
    }
    // The same (user, mechanism) twice in one request is refused for that user.
    let mut pairs = BTreeMap::new();
    for (name, m) in req.deletions.iter().map(|d| (&d.name, d.mechanism)).chain(req.upsertions.iter().map(|u| (&u.name, u.mechanism))) {
        *pairs.entry((name.to_string(), m)).or_insert(0) += 1;
    }
    for ((user, _), n) in &pairs {
        if *n > 1 {
            fail(user, ErrorCode::DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request".into());
        }
    }
    let mut state = ctx.inner.state();
    for d in &req.deletions {
        if d.name.is_empty() {
            fail(&d.name, ErrorCode::UNACCEPTABLE_CREDENTIAL, "Username must not be empty".into());
        } else if let Some(m) = Mechanism::from_type(d.mechanism) {
            if state.scram.get(&d.name, m).is_none() {
                fail(&d.name, ErrorCode::RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist".into());
            }
        } else {
            fail(&d.name, ErrorCode::UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism".into());
        }
    }
    for u in &req.upsertions {
        if u.name.is_empty() {
            fail(&u.name, ErrorCode::UNACCEPTABLE_CREDENTIAL, "Username must not be empty".into());
        } else if Mechanism::from_type(u.mechanism).is_none() {
            fail(&u.name, ErrorCode::UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism".into());
        } else if u.iterations < MIN_ITERATIONS {
            fail(&u.name, ErrorCode::UNACCEPTABLE_CREDENTIAL, "Too few iterations".into());
        } else if u.iterations > MAX_ITERATIONS {
            fail(&u.name, ErrorCode::UNACCEPTABLE_CREDENTIAL, "Too many iterations".into());
        } else if u.salt.is_empty() || u.salted_password.is_empty() {
            fail(&u.name, ErrorCode::UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty".into());
        }
    }
    // A user's changes apply only when all of them are acceptable.
    for d in &req.deletions {
        if errors.contains_key(&*d.name) {
            continue;
        }
        if let (Some(m), Some(creds)) = (Mechanism::from_type(d.mechanism), state.scram.users.get_mut(&*d.name)) {
            creds.remove(&m);
            if creds.is_empty() {
                state.scram.users.remove(&*d.name);
            }
        }
    }
    for u in &req.upsertions {
        if errors.contains_key(&*u.name) {
            continue;
        }
        let Some(m) = Mechanism::from_type(u.mechanism) else { continue };
        let c = Credential::from_salted(m, &u.salt, &u.salted_password, u.iterations);
        state.scram.users.entry(u.name.to_string()).or_default().insert(m, c);
    }
    let results = users
        .iter()
        .map(|u| {
            let (code, why) = errors.get(u).map_or((ErrorCode::NONE, None), |(c, w)| (*c, Some(w.as_str())));
            AlterUserScramCredentialsResult { user: s(u), error_code: code.0, error_message: why.map(s), ..Default::default() }
        })
        .collect();
    AlterUserScramCredentialsResponse { results, ..Default::default() }
}

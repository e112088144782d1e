//! `max_poll_interval` against a real broker, in both protocols: a member that stops calling
//! `poll` for longer leaves its group (as Java's heartbeat thread makes it), so the other
//! member gets its partitions well before the session timeout would have moved them; when it
//! polls again it joins again.

use crate::common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::{unique, Broker};
use kwire_client::{Admin, Consumer, ConsumerConfig, GroupProtocol, NewTopic};
use tokio::sync::watch;

async fn a_member_that_stops_polling_leaves(b: &Broker, protocol: GroupProtocol, close_idle: bool) {
    let admin = Admin::new(b.client().await);
    let topic = unique("poll-interval");
    admin.create_topic(NewTopic::new(&topic, 2)).await.unwrap();
    let config = ConsumerConfig {
        group_protocol: protocol,
        session_timeout: Duration::from_secs(45),
        heartbeat_interval: Duration::from_millis(500),
        max_poll_interval: Duration::from_secs(3),
        ..ConsumerConfig::group(unique("poll-interval-group"))
    };
    // The member that keeps polling, reporting its assignment.
    let (seen_tx, mut seen) = watch::channel(BTreeSet::new());
    let (stop_tx, stop) = watch::channel(false);
    let (client, steady_config, steady_topic) = (b.client().await, config.clone(), topic.clone());
    let steady = tokio::spawn(async move {
        let mut c = Consumer::new(client, steady_config).unwrap();
        c.subscribe(&[&steady_topic]).unwrap();
        while !*stop.borrow() {
            c.poll(Duration::from_millis(100)).await.unwrap();
            seen_tx.send_replace(c.assignment().iter().map(|tp| tp.partition).collect::<BTreeSet<i32>>());
        }
        c.close().await.unwrap();
    });
    // The member that will stop polling: polls until it has a partition and the other one too.
    let mut idle = Consumer::new(b.client().await, config.clone()).unwrap();
    idle.subscribe(&[&topic]).unwrap();
    let start = Instant::now();
    // max_poll_interval runs from the start of the last poll (as Java's), and a poll that joins
    // the group can take seconds on a loaded machine.
    let mut stopped = Instant::now();
    while idle.assignment().is_empty() || seen.borrow().len() != 1 {
        assert!(start.elapsed() < Duration::from_secs(60), "the two members did not split the partitions");
        stopped = Instant::now();
        idle.poll(Duration::from_millis(100)).await.unwrap();
    }
    println!("{protocol:?}: split after {:?}", start.elapsed());
    // Now it stops polling: within max_poll_interval and a rebalance, the other has both.
    let r = tokio::time::timeout(Duration::from_secs(20), seen.wait_for(|s| s.len() == 2)).await.map(|r| r.is_ok());
    let took = stopped.elapsed();
    println!("{protocol:?}: the polling member had both partitions {took:?} after the other stopped polling");
    assert_eq!(r, Ok(true), "{protocol:?}: the idle member kept its partition for 20 s (session timeout 45 s)");
    assert!(took >= Duration::from_secs(3) - Duration::from_millis(200), "{took:?}: before max_poll_interval");
    if close_idle {
        // Closed without polling again: it has left already.
        stop_tx.send_replace(true);
        tokio::time::timeout(Duration::from_secs(30), steady).await.expect("the polling member closes").unwrap();
        tokio::time::timeout(Duration::from_secs(30), idle.close()).await.expect("the idle member closes").unwrap();
        return;
    }
    // Polling again, it joins again and the partitions are split again.
    let back = Instant::now();
    loop {
        idle.poll(Duration::from_millis(100)).await.unwrap();
        if idle.assignment().len() == 1 && seen.borrow().len() == 1 {
            break;
        }
        assert!(back.elapsed() < Duration::from_secs(60), "the idle member did not join again: {:?}", idle.assignment());
    }
    println!("{protocol:?}: joined again after {:?}", back.elapsed());
    stop_tx.send_replace(true);
    tokio::time::timeout(Duration::from_secs(30), idle.close()).await.expect("the idle member closes").unwrap();
    tokio::time::timeout(Duration::from_secs(30), steady).await.expect("the polling member closes").unwrap();
}

#[tokio::test]
async fn classic_member_that_stops_polling_leaves_its_group() {
    common::init_tracing();
    let Some(b) = Broker::from_env("classic_member_that_stops_polling_leaves_its_group") else { return };
    a_member_that_stops_polling_leaves(&b, GroupProtocol::Classic, false).await;
    a_member_that_stops_polling_leaves(&b, GroupProtocol::Classic, true).await;
}

#[tokio::test]
async fn kip848_member_that_stops_polling_leaves_its_group() {
    common::init_tracing();
    let Some(b) = Broker::from_env("kip848_member_that_stops_polling_leaves_its_group") else { return };
    if !common::kip848_supported(&b).await {
        return;
    }
    a_member_that_stops_polling_leaves(&b, GroupProtocol::Consumer, false).await;
    a_member_that_stops_polling_leaves(&b, GroupProtocol::Consumer, true).await;
}
